"""A progress bar per stage for CLI runs: shards done / total and rows/s, on stderr.

The CLI turns it on for its run unless --quiet (`showing_progress`, a context variable); flows run
from the Prefect UI or a deployment leave it off (XMDATA_PROGRESS=1 turns it on), their progress is in
the UI. Skipped shards count as done from the start.
"""
from __future__ import annotations

import contextlib
import contextvars
import sys
import time

from . import settings

PROGRESS_ENV = settings.PROGRESS.name
_shown: contextvars.ContextVar[bool | None] = contextvars.ContextVar("xmdata_progress", default=None)


@contextlib.contextmanager
def showing_progress(shown: bool):
    """Bars on (or off) for the stages run inside the block, whatever XMDATA_PROGRESS says."""
    token = _shown.set(shown)
    try:
        yield
    finally:
        _shown.reset(token)


def progress_shown() -> bool:
    shown = _shown.get()
    return settings.PROGRESS.get() if shown is None else shown


class ShardProgress:
    def __init__(self, stage: str, total: int, already_done: int):
        self.enabled = progress_shown() and total > already_done
        self.rows, self.started = 0, time.perf_counter()
        if self.enabled:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=already_done, desc=f"{stage:>14}", unit="shard",
                            file=sys.stderr, dynamic_ncols=True, leave=True, mininterval=0.5)

    def shard_done(self, record: dict) -> None:
        if not self.enabled:
            return
        self.rows += record.get("rows_in", 0)
        rate = self.rows / max(time.perf_counter() - self.started, 1e-9)
        self.bar.set_postfix_str(f"{rate:,.1f} rows/s", refresh=False)
        self.bar.update(1)

    def close(self) -> None:
        if self.enabled:
            self.bar.close()
