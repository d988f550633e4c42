"""What a process started and must stop before it ends, where Python's exit handlers do not run.

A command the service's warm command process forks ends with `os._exit` (service/command_server.py):
the server's exit handlers are not the command's to run. Whatever the command started that needs
stopping registers here — the scoring stage's decoder processes (tasks/build/decoders.py), whose pool
left unstopped made the multiprocessing resource tracker warn of leaked semaphores on the user's stderr
— and the command runs them before it ends. A process of its own ends normally, and its exit handlers
(concurrent.futures' among them) stop the same things.
"""
from __future__ import annotations

import sys
import threading
from typing import Callable


class ProcessEnds:
    def __init__(self):
        self._lock = threading.Lock()
        self._ends: list[Callable[[], None]] = []

    def add(self, end: Callable[[], None]) -> None:
        with self._lock:
            if end not in self._ends:
                self._ends.append(end)

    def run(self) -> None:
        """Each registered end once, the last registered first."""
        while True:
            with self._lock:
                if not self._ends:
                    return
                end = self._ends.pop()
            try:
                end()
            except Exception as exc:  # the command's outcome is decided: an end that fails is said, not raised
                print(f"xmdata: stopping {getattr(end, '__qualname__', end)!s} failed: {exc}", file=sys.stderr)


PROCESS_ENDS = ProcessEnds()
