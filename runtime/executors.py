"""Executors run shard jobs and say how each ended: in this process, or on a Dask cluster
(`dask_executor.py`).

Both yield (index, outcome, error): `outcome` is what `run_shard_job` returned, `error` why a shard
did not finish. A bad input or a missing model (ContractError, ModelError) is the whole command's
fault, not one shard's: it stops the stage at once and reaches the user as exit 2. So does a full disk
(exit 4) or an object store that does not answer after its retries (exit 5; runtime/faults.py).
"""
from __future__ import annotations

import contextvars
import dataclasses
import os
import sys
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import Iterator

from . import settings
from .cluster import SHARD_CORES, default_workers, worker_threads
from .faults import StoreUnreachable, is_out_of_space, store_unreachable
from .process import gather_new_units, run_shard_job
from .side_by_side import SHARD_FUNCTIONS, raise_if_stopping
from .storage import is_url
from .stage import Stage

Outcome = tuple[int, "dict | None", "str | None"]
UPLOAD_OVERLAP = 2  # shards in flight in this process when outputs go to an object store


def is_input_error(exc: BaseException) -> bool:
    """A bad input or model, a full disk or an object store that does not answer (runtime/faults.py):
    the command's fault, not one shard's."""
    from xmdata.models.base import ModelError
    from xmdata.schemas import ContractError

    return isinstance(exc, (ContractError, ModelError, StoreUnreachable)) or is_out_of_space(exc)


def failure_reason(exc: BaseException) -> str:
    """A shard's failure in a line (a KilledWorker is said by dask_executor, with the workers' limit)."""
    return f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]


def use_worker_threads() -> None:
    """torch/BLAS threads as a LocalCluster worker here would have them: the same numerics, and no
    thread pool spinning over tiny matrices (measured on 2 cores: tiny M2M100 beam search 51 s with
    torch's default 2 threads, 8.9 s with 1). An OMP_NUM_THREADS the user set is left alone."""
    threads = settings.OMP_NUM_THREADS.get() or worker_threads(default_workers())
    for name in (settings.OMP_NUM_THREADS.name, "MKL_NUM_THREADS"):  # for the libraries that read them
        os.environ.setdefault(name, str(threads))
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)


class InProcessExecutor:
    """Small work: no cluster to start, no data to ship, models loaded in this process.

    Outputs on an object store: two shards in flight, so one computes while the other's objects go
    up (a PUT is a round trip the local disk does not pay; bench/storage.py measures the gain). The
    stage's function itself runs one shard at a time, as on a single-threaded worker, and one at a
    time in this process whichever stage it belongs to (parts of a build run side by side,
    runtime/side_by_side.py): a model is never called from two threads at once."""

    where = "in-process"

    def run(self, stage: Stage, jobs: list[tuple[int, str]], root: str) -> Iterator[Outcome]:
        use_worker_threads()
        stage = dataclasses.replace(stage, fn=_one_at_a_time(stage.fn))  # same name, version, params
        if not is_url(root):
            for index, path in jobs:
                raise_if_stopping()  # the command was interrupted while this ran as a part of a build
                yield index, *shard_outcome(lambda: run_shard_job(stage, path, root, index, record_checked=True))
            return
        pool = ThreadPoolExecutor(UPLOAD_OVERLAP)
        try:
            # Each in a copy of this context: the command's storage options (runtime/storage.py).
            futures = {pool.submit(contextvars.copy_context().run, run_shard_job, stage, path, root, index,
                                   record_checked=True): index for index, path in jobs}
            for future in as_completed(futures):
                raise_if_stopping()
                yield futures[future], *shard_outcome(future.result)
        finally:  # an input error or Ctrl-C: shards not started yet never start
            pool.shutdown(wait=True, cancel_futures=True)

    def gather_new_units(self, stage: Stage, paths: list[str]) -> dict:
        """The pending shards' new units computed together first (process.gather_new_units)."""
        use_worker_threads()
        return gather_new_units(dataclasses.replace(stage, fn=_one_at_a_time(stage.fn)), paths)


def _one_at_a_time(fn):
    """One shard function at a time in this process, with every core of it (SHARD_CORES): torch keeps a
    worker's share of threads (use_worker_threads), the work beside it (image decoders) takes the rest."""
    def locked(table, params):
        with SHARD_FUNCTIONS:
            token = SHARD_CORES.set(len(os.sched_getaffinity(0)))
            try:
                return fn(table, params)
            finally:
                SHARD_CORES.reset(token)
    return locked


def shard_outcome(job) -> tuple["dict | None", "str | None"]:
    """(outcome, None), or (None, why) for one shard's failure; an input error stops the stage."""
    try:
        return job(), None
    except Exception as exc:  # noqa: BLE001 — one shard's failure is recorded, the rest go on
        if is_input_error(exc):
            raise
        if gone := store_unreachable(exc):  # after its retries: every other shard would wait for it too
            raise gone from exc
        return None, failure_reason(exc)

