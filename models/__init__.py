"""Model backends behind one small interface per kind; see registry.py.

Nothing here imports torch at import time: backends import their heavy libraries inside load().
"""
