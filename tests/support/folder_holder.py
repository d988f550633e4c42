"""Another live process holding a folder's lock (runtime/folder_lock.py) until the test lets it go."""
from __future__ import annotations

import contextlib
import subprocess
import sys


@contextlib.contextmanager
def holding(folder, script: str):
    """SCRIPT (python -c, FOLDER as its argument) takes the lock, prints "held" and waits on stdin."""
    holder = subprocess.Popen([sys.executable, "-c", script, str(folder)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)
    assert holder.stdout.readline() == "held\n"
    try:
        yield holder
    finally:
        holder.stdin.close()
        holder.wait(timeout=60)
