"""Where shards run: one Prefect task per shard, on a Dask cluster (local by default, or by address)."""
from __future__ import annotations

import os

from prefect import task
from prefect.cache_policies import NONE
from prefect.futures import as_completed
from prefect_dask import DaskTaskRunner

from .atomic import sha256_file
from .process import StageReport, process_shard
from .progress import ShardProgress
from .records import finished_record
from .shards import ShardPaths, remove_shards_beyond, shard_index
from .stage import Stage

DASK_ADDRESS_ENV = "XMDATA_DASK_ADDRESS"


def dask_task_runner(dask_address: str | None = None, n_workers: int | None = None) -> DaskTaskRunner:
    """An existing scheduler when an address is given (flag or env), else a LocalCluster.

    One thread per worker process: a worker holds one copy of each model and runs one shard at a
    time, so processes, not threads, give the parallelism (and the GIL stays out of the way).
    """
    address = dask_address or os.environ.get(DASK_ADDRESS_ENV)
    if address:
        return DaskTaskRunner(address=address)
    cores = max(1, os.cpu_count() or 1)
    workers = n_workers or cores
    # Each worker's torch/BLAS gets its share of the cores, not all of them (no oversubscription).
    threads = str(max(1, cores // workers))
    return DaskTaskRunner(
        cluster_class="distributed.LocalCluster",
        cluster_kwargs={"n_workers": workers, "threads_per_worker": 1, "processes": True,
                        "dashboard_address": ":0",
                        "env": {"OMP_NUM_THREADS": threads, "MKL_NUM_THREADS": threads}},
    )


# Our completion records do the resuming; Prefect's own input cache would hash whole tables.
@task(name="shard", cache_policy=NONE)
def shard_task(stage: Stage, input_path: str, root: str, index: int) -> dict:
    return process_shard(stage, input_path, root, index)


def run_stage(stage: Stage, input_paths: list[str], root: str) -> StageReport:
    """Submit every unfinished shard to the flow's task runner; skip (and count) finished ones."""
    remove_shards_beyond(root, stage.name, len(input_paths))
    records: dict[int, dict] = {}
    futures = {}
    for path in input_paths:
        index = shard_index(path)
        done = finished_record(stage, ShardPaths(root, stage.name, index), sha256_file(path))
        if done is not None:
            records[index] = done
        else:
            futures[index] = shard_task.with_options(
                task_run_name=f"{stage.name}-{index:05d}").submit(stage, path, root, index)
    progress = ShardProgress(stage.name, len(input_paths), len(records))
    try:
        index_of = {id(future): index for index, future in futures.items()}
        for future in as_completed(list(futures.values())):
            records[index_of[id(future)]] = record = future.result()
            progress.shard_done(record)
    finally:
        progress.close()
    ordered = [records[i] for i in sorted(records)]
    return StageReport(stage.name, ordered, shards_run=len(futures),
                       shards_skipped=len(input_paths) - len(futures),
                       data_paths=[ShardPaths(root, stage.name, i).data for i in sorted(records)])
