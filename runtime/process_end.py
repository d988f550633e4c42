"""What a process started and must stop before it ends, where Python's exit handlers do not run.

A command the service's warm command process forks ends with `os._exit` (service/command_server.py):
the server's exit handlers are not the command's to run. Whatever the command started that needs
stopping registers here — the scoring stage's decoder processes (tasks/build/decoders.py), whose pool
left unstopped made the multiprocessing resource tracker warn of leaked semaphores on the user's stderr
— and the command runs them before it ends. A process of its own ends normally, and its exit handlers
(concurrent.futures' among them) stop the same things.
"""
from __future__ import annotations

import os
import sys
import threading
from typing import Callable


class ProcessEnds:
    def __init__(self):
        self._lock = threading.Lock()
        self._ends: list[Callable[[], None]] = []
        self._reports: list[Callable[[int], None]] = []

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

    def report_exit_to(self, report: Callable[[int], None]) -> None:
        """`report(code)` is told the status of an `exit_now` (the command server's client waits for it)."""
        with self._lock:
            self._reports.append(report)

    def exit_now(self, code: int) -> None:
        """End this process at once with `code`, from any thread (a run whose Prefect server went away,
        xmdata/server_watch.py): the ends run, whoever waits for the status is told, no thread is waited for."""
        self.run()
        sys.stdout.flush()
        sys.stderr.flush()
        for report in list(self._reports):
            try:
                report(code)
            except Exception:  # noqa: BLE001 - the client went away: nothing to tell
                pass
        os._exit(code)


PROCESS_ENDS = ProcessEnds()
