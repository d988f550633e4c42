"""Running a stage over its shards: skip the finished, execute the rest, account for every one.

Prefect tracks stages, Dask (or this process) executes shards: a stage is one Prefect task run
with a live progress artifact and a per-shard table, while its shards go straight to the executor
the session picks (`session.py`). A Prefect task run per shard cost ~0.2 CPU-s and Prefect is
known to stall past ~1,000 task runs in a flow; a Dask task costs ~10 CPU-ms all told, and
cheap shards share one (`dask_executor.py`).
"""
from __future__ import annotations

import dataclasses
import logging
import time
from typing import Callable

from . import memo, storage
from .atomic import sha256_file
from .folder_lock import remove_stray_temp_files
from .process import StageReport
from .progress import ShardProgress
from .records import finished_record
from .session import current_session
from .shards import ShardPaths, remove_shards_beyond, shard_index
from .stage import Stage
from .stage_tracking import StageTracker, in_flow, tracked

log = logging.getLogger("xmdata.execution")


class ShardsFailed(RuntimeError):
    """Some shards of a stage could not finish; the others did, and a rerun runs only these."""

    def __init__(self, stage: str, failed: dict[int, str]):
        self.stage, self.failed = stage, failed
        shards: dict[str, list[int]] = {}  # a reason many shards share (no worker left) said once
        for index, reason in sorted(failed.items()):
            shards.setdefault(reason, []).append(index)
        listed = "; ".join(f"{_named(indexes)}: {reason}" for reason, indexes in list(shards.items())[:10])
        more = f" (and {len(shards) - 10} more reasons)" if len(shards) > 10 else ""
        super().__init__(f"stage {stage}: {len(failed)} shard(s) failed — {listed}{more}. "
                         f"Finished shards are kept; run the same command again to finish these.")


def _gather(stage: Stage, pending: list[tuple[int, object]], executor) -> dict | None:
    """A model stage rebuilding two shards or more with the memo on: their new units computed
    together first (process.gather_new_units), so that a few new inputs spread over many shards
    share batches. Best effort: a gather that fails leaves the work to the shards, which then say why."""
    if (not stage.memo_gather or stage.memo.location is None or len(pending) < 2
            or not all(isinstance(source, str) for _, source in pending)):
        return None
    try:
        gathered = executor.gather_new_units(stage, [source for _, source in pending])
    except Exception as exc:  # noqa: BLE001 - its job was lost (a worker died): the shards run as without it
        log.warning("stage %s: gathering its new units failed (%s: %s); its shards compute them",
                    stage.name, type(exc).__name__, exc)
        return None
    if gathered.get("failed"):  # what it stored before is kept and counted; the shards fail on their own if they must
        log.warning("stage %s: gathering its new units stopped (%s); its shards compute the rest",
                    stage.name, gathered["failed"])
    return gathered


def _add_counts(units: dict, counts: dict) -> None:
    for kind, kind_counts in counts.items():
        units.setdefault(kind, memo.Counts()).add(memo.Counts(**kind_counts))


def _named(indexes: list[int], shown: int = 5) -> str:
    more = f" and {len(indexes) - shown} more" if len(indexes) > shown else ""
    return ", ".join(f"shard-{i:05d}" for i in indexes[:shown]) + more


def run_stage(stage: Stage, input_paths: list[str], root: str) -> StageReport:
    """Every shard of `input_paths` through `stage`, as one Prefect task run when inside a flow."""
    return run_shards(stage, [(shard_index(path), path) for path in input_paths], root,
                      lambda index, path: sha256_file(path))


def run_shards(stage: Stage, jobs: list[tuple[int, object]], root: str, input_sha: Callable[[int, object], str],
               executor=None, in_the_ui: bool = True) -> StageReport:
    """Skip the shards whose record matches `input_sha(index, source)`, run the rest on `executor`
    (else the one the session picks for the stage), account for every one. `jobs`: (index, source)
    pairs, a source being an input shard's path, or what `executor` knows how to run (ingest's tables).
    `in_the_ui`: in a flow, a Prefect task run with its progress and shard table (ingest has none: a
    task run costs ~0.2 CPU-s, more than writing its shards)."""
    if in_the_ui and in_flow():
        return tracked(stage.name)(_run_shards)(stage, jobs, root, input_sha, executor, True)
    return _run_shards(stage, jobs, root, input_sha, executor, in_the_ui)


def _run_shards(stage: Stage, jobs: list[tuple[int, object]], root: str, input_sha, executor,
                in_the_ui: bool) -> StageReport:
    started = time.perf_counter()
    if stage.memo is None:  # the command's memo (or the environment's) travels with the stage to its workers
        stage = dataclasses.replace(stage, memo=memo.current_options())
    recorded = remove_shards_beyond(root, stage.name, len(jobs))
    records: dict[int, dict] = {}
    pending: list[tuple[int, object]] = []
    for index, source in jobs:
        paths = ShardPaths(root, stage.name, index)
        # No record, nothing to compare: the input is hashed only when there is (one GET less on S3).
        done = finished_record(stage, paths, input_sha(index, source)) if index in recorded else None
        if done is not None:
            records[index] = done
        else:
            pending.append((index, source))
    def rows() -> int:  # counted only when `auto` must choose by size: a GET per shard on a store
        return sum(storage.parquet_rows(path) for _, path in pending)

    executor = executor or current_session().executor_for(stage, rows, len(pending))
    gathered = _gather(stage, pending, executor)
    if gathered:
        stage = dataclasses.replace(stage, memo=dataclasses.replace(stage.memo, fresh=frozenset(gathered["fresh"])))
    tracker = StageTracker(stage.name, len(jobs), len(records), executor.where, enabled=in_the_ui and in_flow())
    progress = ShardProgress(stage.name, len(jobs), len(records))
    failed: dict[int, str] = {}
    ran, load_s, work_s = 0, 0.0, 0.0
    units: dict[str, memo.Counts] = {}
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
            _add_counts(units, outcome.get("memo", {}))
            progress.shard_done(outcome["record"])
            tracker.shard_done(index, outcome)
    finally:
        progress.close()
    # Every shard has come back, so no writer of this run is left: a worker killed mid-write (its
    # shard ran again elsewhere) left a temp file that would otherwise sit in the output until the
    # next run's start-up sweep.
    remove_stray_temp_files(storage.join(root, stage.name))
    if gathered:  # its entries were stored by it: the shards took them, counted as computed
        _add_counts(units, {kind: {"stored": counts.get("stored", 0), "bad": counts.get("bad", 0)}
                            for kind, counts in gathered["memo"].items()})
        load_s += gathered["load_s"]
        work_s += gathered["seconds"] - gathered["load_s"]
    timing = {"where": executor.where, "seconds": round(time.perf_counter() - started, 3),
              "model_load_s": round(load_s, 3), "work_s": round(work_s, 3)}
    if gathered:
        timing["gathered"] = {"units": len(gathered["fresh"]), "declined": gathered["declined"],
                              "seconds": round(gathered["seconds"], 3),
                              **({"failed": gathered["failed"]} if gathered.get("failed") else {})}
    if units:  # model work per unit kind: served by the memo, computed (beside the build, never hashed)
        timing["memo"] = {kind: counts.as_dict() for kind, counts in sorted(units.items())}
    tracker.finish(timing)
    if failed:
        raise ShardsFailed(stage.name, failed)
    ordered = sorted(records)
    return StageReport(stage.name, [records[i] for i in ordered], shards_run=ran,
                       shards_skipped=len(jobs) - len(pending),
                       data_paths=[ShardPaths(root, stage.name, i).data for i in ordered], timing=timing)
