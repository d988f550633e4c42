"""Training on a release: the shared runtime (loop.py), the model card (card.py) and one module per recipe."""
