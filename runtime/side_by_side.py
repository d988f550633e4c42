"""Independent parts of a build side by side, each in a thread of its own: a part spends its time
waiting for its stages' shards, so two parts keep the workers busy where one leaves them idle at
its stage's tail (its last shards) and while it writes its reports.

Each part runs in a copy of the caller's context (the flow run its stages are tasks of, the
execution session, progress bars, storage options). Results come back in the order given, so what
a build writes does not depend on which part finished first. A part that fails does not stop the
others (their shards finish and are kept for a rerun); the first failure in the given order is
raised once all have ended, and any other is logged. Stages in this process still run one shard
function at a time (`SHARD_FUNCTIONS`, held by executors.InProcessExecutor), and figures are drawn
one at a time (figures.pyplot).

Ctrl-C (or any exception) in the caller while parts run stops them as it stops a stage run in the
caller's own thread: each part's executor sees `stopping()` between shards (in this process) or
within 0.1 s (on a cluster, whose futures of the stage it then cancels) and raises KeyboardInterrupt.
The caller waits for them (at most GRACE_S) before it raises, so the command does not end with a
part's thread inside a model's native code, which aborts the interpreter's exit ("terminate called
without an active exception", seen with torch), and a process that goes on (a served deployment
whose run was cancelled) has no part left running.
"""
from __future__ import annotations

import contextvars
import logging
import threading
import time
from typing import Callable, TypeVar

from .faults import is_out_of_space

T = TypeVar("T")
JOIN_EVERY_S = 0.5  # the caller's thread wakes this often, so Ctrl-C reaches it while it waits
GRACE_S = 60.0  # at most this long for the parts to stop after Ctrl-C
SHARD_FUNCTIONS = threading.Lock()  # one shard function in this process at a time, whichever part runs it
_stop: contextvars.ContextVar[threading.Event | None] = contextvars.ContextVar("xmdata_parts_stop", default=None)


def stopping() -> bool:
    """Whether the caller of the part this runs in was interrupted: an executor stops its stage."""
    stop = _stop.get()
    return stop is not None and stop.is_set()


def raise_if_stopping() -> None:
    """KeyboardInterrupt when `stopping()`: where an executor checks between shards."""
    if stopping():
        raise KeyboardInterrupt


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

    stop = threading.Event()
    token = _stop.set(stop)
    try:  # daemon threads: a part that does not stop in GRACE_S does not keep the command alive
        threads = [threading.Thread(target=contextvars.copy_context().run, args=(run, i, part), daemon=True,
                                    name=f"xmdata-part-{i}") for i, part in enumerate(parts)]
    finally:
        _stop.reset(token)
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            while thread.is_alive():
                thread.join(JOIN_EVERY_S)
    except BaseException:
        stop.set()
        deadline = time.monotonic() + GRACE_S
        try:  # a running shard function ends, then its part stops before the next
            for thread in [t for t in threads if t.ident is not None]:  # those started before the interrupt
                thread.join(max(0.0, deadline - time.monotonic()))
        except KeyboardInterrupt:  # a second Ctrl-C: out now
            pass
        raise
    failed = [exc for exc in errors if exc is not None]
    for other in failed[1:]:
        if is_out_of_space(other) and is_out_of_space(failed[0]):
            continue  # the same full disk, said once by the command
        (log or logging.getLogger(__name__)).error("another part of the build failed too: %s", other)
    if failed:
        raise failed[0]
    return results
