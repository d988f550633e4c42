"""A progress bar per stage for CLI runs: shards done / total and rows/s, on stderr.

The CLI turns it on (XMDATA_PROGRESS=1) unless --quiet; flows run from the Prefect UI or a
deployment leave it off, their progress is in the UI. Skipped shards count as done from the start.
"""
from __future__ import annotations

import os
import sys
import time

PROGRESS_ENV = "XMDATA_PROGRESS"


class ShardProgress:
    def __init__(self, stage: str, total: int, already_done: int):
        self.enabled = os.environ.get(PROGRESS_ENV) == "1" and total > already_done
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
