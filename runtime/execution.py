"""Running a stage over its shards: skip the finished, execute the rest, account for every one.

Prefect tracks stages, Dask (or this process) executes shards: a stage is one Prefect task run
with a live progress artifact and a per-shard table, while its shards go straight to the executor
the session picks (`session.py`). A Prefect task run per shard cost ~0.2 CPU-s and Prefect is
known to stall past ~1,000 task runs in a flow; a Dask task costs ~10 CPU-ms all told, and
cheap shards share one (`dask_executor.py`).
"""
from __future__ import annotations

import time

from . import storage
from .atomic import remove_stray_temp_files, sha256_file
from .process import StageReport
from .progress import ShardProgress
from .records import finished_record
from .session import current_session
from .shards import ShardPaths, remove_shards_beyond, shard_index
from .stage import Stage
from .stage_tracking import StageTracker, in_flow, tracked


class ShardsFailed(RuntimeError):
    """Some shards of a stage could not finish; the others did, and a rerun runs only these."""

    def __init__(self, stage: str, failed: dict[int, str]):
        self.stage, self.failed = stage, failed
        listed = "; ".join(f"shard-{i:05d}: {reason}" for i, reason in sorted(failed.items())[:10])
        more = f" (and {len(failed) - 10} more)" if len(failed) > 10 else ""
        super().__init__(f"stage {stage}: {len(failed)} shard(s) failed — {listed}{more}. "
                         f"Finished shards are kept; run the same command again to finish these.")


def run_stage(stage: Stage, input_paths: list[str], root: str) -> StageReport:
    """Every shard of `input_paths` through `stage`, as one Prefect task run when inside a flow."""
    if in_flow():
        return tracked(stage.name)(_run_stage)(stage, input_paths, root)
    return _run_stage(stage, input_paths, root)


def _run_stage(stage: Stage, input_paths: list[str], root: str) -> StageReport:
    started = time.perf_counter()
    recorded = remove_shards_beyond(root, stage.name, len(input_paths))
    records: dict[int, dict] = {}
    pending: list[tuple[int, str]] = []
    for path in input_paths:
        index = shard_index(path)
        paths = ShardPaths(root, stage.name, index)
        # No record, nothing to compare: the input is hashed only when there is (one GET less on S3).
        done = finished_record(stage, paths, sha256_file(path)) if index in recorded else None
        if done is not None:
            records[index] = done
        else:
            pending.append((index, path))
    def rows() -> int:  # counted only when `auto` must choose by size: a GET per shard on a store
        return sum(storage.parquet_rows(path) for _, path in pending)

    executor = current_session().executor_for(stage, rows, len(pending))
    tracker = StageTracker(stage.name, len(input_paths), len(records), executor.where)
    progress = ShardProgress(stage.name, len(input_paths), len(records))
    failed: dict[int, str] = {}
    ran, load_s, work_s = 0, 0.0, 0.0
    try:
        for index, outcome, error in executor.run(stage, pending, root):
            if error is not None:
                failed[index] = error
                tracker.shard_failed(index, error)
                continue
            # A shard a lost worker finished comes back from its rerun as already done: it was still
            # run by this command, once.
            records[index] = outcome["record"]
            ran += 1
            load_s += outcome["load_s"]
            work_s += outcome["seconds"] - outcome["load_s"]
            progress.shard_done(outcome["record"])
            tracker.shard_done(index, outcome)
    finally:
        progress.close()
    # Every shard has come back, so no writer of this run is left: a worker killed mid-write (its
    # shard ran again elsewhere) left a temp file that would otherwise sit in the output until the
    # next run's start-up sweep.
    remove_stray_temp_files(storage.join(root, stage.name))
    timing = {"where": executor.where, "seconds": round(time.perf_counter() - started, 3),
              "model_load_s": round(load_s, 3), "work_s": round(work_s, 3)}
    tracker.finish(timing)
    if failed:
        raise ShardsFailed(stage.name, failed)
    ordered = sorted(records)
    return StageReport(stage.name, [records[i] for i in ordered], shards_run=ran,
                       shards_skipped=len(input_paths) - len(pending),
                       data_paths=[ShardPaths(root, stage.name, i).data for i in ordered], timing=timing)
