"""Independent parts of a build side by side, each in a thread of its own: a part spends its time
waiting for its stages' shards, so two parts keep the workers busy where one leaves them idle at
its stage's tail (its last shards) and while it writes its reports.

Each part runs in a copy of the caller's context (the flow run its stages are tasks of, the
execution session, progress bars, storage options). Results come back in the order given, so what
a build writes does not depend on which part finished first. A part that fails does not stop the
others (their shards finish and are kept for a rerun); the first failure in the given order is
raised once all have ended, and any other is logged. Stages in this process still run one at a time
(executors.InProcessExecutor), and figures are drawn one at a time (figures.pyplot).
"""
from __future__ import annotations

import contextvars
import logging
import threading
from typing import Callable, TypeVar

T = TypeVar("T")
JOIN_EVERY_S = 0.5  # the caller's thread wakes this often, so Ctrl-C reaches it while it waits


def side_by_side(parts: list[Callable[[], T]], log: logging.Logger | None = None) -> list[T]:
    if len(parts) < 2:
        return [part() for part in parts]
    results: list = [None] * len(parts)
    errors: list[BaseException | None] = [None] * len(parts)

    def run(i: int, part: Callable[[], T]) -> None:
        try:
            results[i] = part()
        except BaseException as exc:  # noqa: BLE001 — raised by the caller, in the parts' order
            errors[i] = exc

    # Daemon threads: Ctrl-C ends the command without waiting for a part's remaining shards.
    threads = [threading.Thread(target=contextvars.copy_context().run, args=(run, i, part), daemon=True,
                                name=f"xmdata-part-{i}") for i, part in enumerate(parts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        while thread.is_alive():
            thread.join(JOIN_EVERY_S)
    failed = [exc for exc in errors if exc is not None]
    for other in failed[1:]:
        (log or logging.getLogger(__name__)).error("another part of the build failed too: %s", other)
    if failed:
        raise failed[0]
    return results
