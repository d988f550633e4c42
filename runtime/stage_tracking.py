"""What the Prefect UI shows of a stage: one task run, a live progress artifact, a per-shard table.

Updates go to the API at most once a second whatever the shard count, so a 10,000-shard stage
costs the API a few dozen calls, not 10,000 task runs.
"""
from __future__ import annotations

import re
import time

TABLE_ROWS = 1_000  # the per-shard table lists failures first, then at most this many shards
UPDATE_EVERY_S = 1.0


def in_flow() -> bool:
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


def tracked(stage_name: str):
    """`fn` as a Prefect task run named after the stage (no result caching: records resume)."""
    from prefect import task
    from prefect.cache_policies import NONE

    def wrap(fn):
        return task(fn, name="stage", task_run_name=stage_name, cache_policy=NONE, persist_result=False)
    return wrap


def artifact_key(stage: str, kind: str) -> str:
    return re.sub(r"[^a-z0-9-]", "-", f"{stage}-{kind}".lower())


class StageTracker:
    def __init__(self, stage: str, total: int, done: int, where: str, enabled: bool):
        self.stage, self.total, self.done, self.where = stage, total, done, where
        self.rows: list[dict] = []
        self.failed: list[dict] = []
        self.enabled = enabled  # inside a flow: the Prefect API hears of it
        self.last_update = 0.0
        self.artifact_id = None
        if self.enabled and total:
            from prefect.artifacts import create_progress_artifact

            self.artifact_id = create_progress_artifact(
                progress=100.0 * done / total, key=artifact_key(stage, "progress"),
                description=f"{stage}: shards finished of {total} ({where})")

    def shard_done(self, index: int, outcome: dict) -> None:
        self.done += 1
        record = outcome["record"]
        if len(self.rows) < TABLE_ROWS:
            self.rows.append({"shard": f"shard-{index:05d}", "status": "ran" if outcome["recomputed"] else
                              "ran (finished by a lost worker)", "rows_in": record["rows_in"], "rows_out": record["rows_out"],
                              "rejected": sum(record["rows_rejected"].values()),
                              "seconds": round(outcome["seconds"], 3), "model_load_s": round(outcome["load_s"], 3)})
        self._update()

    def shard_failed(self, index: int, reason: str) -> None:
        self.failed.append({"shard": f"shard-{index:05d}", "status": "failed", "reason": reason})
        self._update()

    def _update(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.artifact_id is None or (not force and now - self.last_update < UPDATE_EVERY_S):
            return
        from prefect.artifacts import update_progress_artifact

        update_progress_artifact(self.artifact_id, progress=100.0 * self.done / self.total)
        self.last_update = now

    def finish(self, timing: dict) -> None:
        if not self.enabled:
            return
        self._update(force=True)
        if timing.get("memo"):  # the run's log (the UI's Logs tab) says what the memo did for the stage
            from prefect import get_run_logger

            get_run_logger().info("%s%s", self.stage, memo_line(timing["memo"]))
        if not (self.rows or self.failed):
            return
        from prefect.artifacts import create_table_artifact

        shown = len(self.failed) + len(self.rows)
        create_table_artifact(self.failed + self.rows, key=artifact_key(self.stage, "shards"),
                              description=f"{self.stage}: {shown} shard(s) run this time"
                              f"{' (first ' + str(TABLE_ROWS) + ' listed)' if len(self.rows) >= TABLE_ROWS else ''}; "
                              f"{timing['where']}, {timing['seconds']} s, model loads {timing['model_load_s']} s"
                              f"{memo_line(timing.get('memo'))}")


def memo_line(units: dict | None) -> str:
    """"; memo: beam_candidates 120 served, 12 computed" — what the memo did for a stage, if anything."""
    if not units:
        return ""
    parts = [f"{kind} {c.get('served', 0)} served, {c.get('computed', 0)} computed"
             + (f", {c['bad']} bad entries recomputed" if c.get("bad") else "") for kind, c in units.items()]
    return "; memo: " + "; ".join(parts)
