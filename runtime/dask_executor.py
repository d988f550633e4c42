"""Shards on a Dask cluster, a few to a Dask task when they are cheap.

A Dask task costs ~10 CPU-ms all told on a 2-core machine (client, scheduler and worker: measured
with bench/orchestration.py), more than a trivial shard's own work. So the first shards go one to
a task, and once one a worker thread is back, their measured time sets how many of the rest share
one: about TASK_S of work a task, with at least TASKS_PER_THREAD tasks per worker thread for
balance. A model stage's shards take seconds each and keep one to a task.

A worker lost mid-task has the task rerun elsewhere, where its finished shards are found by their
records (a hash, not the work). A task that keeps killing workers (KilledWorker) has its unfinished
shards run again one to a task, so that only the shard that kills is recorded as failed.

A cluster this run started on this machine (a LocalCluster) that has had no worker, nor a worker
process starting, for NO_WORKERS_S — every worker process died and its nanny could not start
another — would leave the stage waiting forever: its unfinished shards fail instead, named, and a
rerun finishes them. A cluster elsewhere (an address, the service, SLURM) may be waiting for
workers to come, and is left to its manager.
"""
from __future__ import annotations

import statistics
import time
import uuid
from typing import Iterator

from .executors import Outcome, failure_reason, is_input_error, shard_outcome
from .placement import placement
from .process import run_shard_job
from .stage import Stage
from .storage import storage_options

Job = tuple[int, str]
TASK_S = 0.5
TASKS_PER_THREAD = 4
NO_WORKERS_S = 60.0  # no worker and none starting, this long: the nannies gave up


def shards_on_worker(group: list[Job], stage: Stage, root: str, options: dict | None) -> list[Outcome]:
    """One Dask task: its shards in turn, a shard's failure recorded apart; an input error stops it."""
    return [(index, *shard_outcome(lambda: run_shard_job(stage, path, root, index, options)))
            for index, path in group]


def shards_per_task(seconds: list[float], remaining: int, threads: int) -> int:
    """From the work seconds of the shards back so far (none yet: one shard a task)."""
    by_time = int(TASK_S / max(statistics.median(seconds), 1e-6)) if seconds else 1
    return max(1, min(by_time, remaining // (threads * TASKS_PER_THREAD)))


class DaskExecutor:
    where = "cluster"

    def __init__(self, client):
        self.client = client

    def run(self, stage: Stage, jobs: list[Job], root: str) -> Iterator[Outcome]:
        from distributed import as_completed

        if not jobs:
            return
        tasks = _Tasks(self.client, stage, root)
        threads = max(1, sum(self.client.nthreads().values()))
        first, rest = jobs[:2 * threads], jobs[2 * threads:]  # the first: one a task, keeping all busy
        running = as_completed(tasks.submit([[job] for job in first]), loop=self.client.loop)
        seconds: list[float] = []
        returned: set[int] = set()
        try:
            for batch in self._batches(running):
                if batch is None:  # no worker left: every shard not back yet fails, named
                    yield from ((index, None, no_workers_reason()) for index, _ in jobs if index not in returned)
                    return
                finished, failed = [], []
                for future in batch:  # each status read once: it changes under us
                    status = future.status
                    if status in ("lost", "pending"):  # its worker died holding it: computed again
                        running.add(future)
                    else:
                        (finished if status == "finished" else failed).append(future)
                for future, outcomes in self._gather(finished):
                    if outcomes is None:
                        failed.append(future)
                        continue
                    for index, outcome, error in outcomes:
                        if outcome is not None and outcome["recomputed"]:
                            seconds.append(outcome["seconds"] - outcome["load_s"])
                        returned.add(index)
                        yield index, outcome, error
                for future in failed:
                    for outcome in self._failed(future, tasks, running):
                        returned.add(outcome[0])
                        yield outcome
                for future in finished + failed:
                    future.release()
                if rest and (len(seconds) >= threads or not running.count()):  # a shard a thread measured
                    size = shards_per_task(seconds, len(rest), threads)
                    running.update(tasks.submit([rest[i:i + size] for i in range(0, len(rest), size)]))
                    rest = []
        finally:  # Ctrl-C or an input error: nothing of this stage keeps running on the cluster
            self.client.cancel([f for f in tasks.groups if not f.done()])

    def _batches(self, running) -> Iterator[list | None]:
        """`running.batches()`, and None once a LocalCluster of ours has had no worker, nor one
        starting, for NO_WORKERS_S."""
        from distributed import LocalCluster

        cluster = getattr(self.client, "cluster", None)  # the LocalCluster object when we started it
        if not isinstance(cluster, LocalCluster):
            yield from running.batches()
            return
        seen = time.monotonic()
        while not running.is_empty():
            if running.has_ready():
                yield running.next_batch(block=False)
                continue
            if has_workers(cluster):
                seen = time.monotonic()
            elif time.monotonic() - seen > NO_WORKERS_S:
                yield None
                return
            with running.thread_condition:  # woken by a finished future, as Dask's own loop is
                running.thread_condition.wait(timeout=0.1)

    def _gather(self, futures: list) -> list[tuple]:
        """(future, its outcomes) in one gather; on the rare failure (a result lost with its worker,
        then failing when computed again) one by one, None for a future that failed."""
        try:
            return list(zip(futures, self.client.gather(futures)))
        except Exception:  # noqa: BLE001 — each future's own status says what happened
            pairs = []
            for future in futures:
                try:
                    pairs.append((future, future.result()))
                except Exception:  # noqa: BLE001
                    pairs.append((future, None))
            return pairs

    def _failed(self, future, tasks: "_Tasks", running) -> Iterator[Outcome]:
        group = tasks.groups[future]
        if future.status == "cancelled":  # the scheduler went away or the cluster shut down
            reason = "cancelled: the cluster dropped it (scheduler lost or shut down)"
            yield from ((index, None, reason) for index, _ in group)
            return
        exc = future.exception()
        if is_input_error(exc):
            raise exc
        if len(group) > 1:  # which of its shards kills workers? each alone tells (finished ones: a hash)
            running.update(tasks.submit([[job] for job in group]))
        else:
            yield group[0][0], None, failure_reason(exc)


def has_workers(cluster) -> bool:
    """A worker registered, or a nanny's worker process alive: starting, or restarting after a death
    (on a loaded machine that takes tens of seconds, and is no reason to fail anything)."""
    if cluster.scheduler.workers:
        return True
    nannies = list(cluster.workers.values())
    processes = (getattr(getattr(nanny, "process", None), "process", None) for nanny in nannies)
    return any(process is not None and process.is_alive() for process in processes)


def no_workers_reason() -> str:
    return (f"no worker: the cluster started for this run had none, and none starting, for "
            f"{NO_WORKERS_S:.0f} s (its worker processes died and were not restarted)")


class _Tasks:
    """Submits groups of shards, remembering which future holds which."""

    def __init__(self, client, stage: Stage, root: str):
        self.client, self.stage, self.root = client, stage, root
        self.options = storage_options() or None  # a worker elsewhere shares only the store with us
        self.where = placement(client, stage)  # GPU stages on GPU workers, when there are any
        self.token = uuid.uuid4().hex[:8]
        self.groups: dict = {}
        self.rounds = 0

    def submit(self, groups: list[list[Job]]) -> list:
        # One `map` a round, not a `submit` a task: one graph message, the stage pickled once.
        self.rounds += 1
        keys = [f"{self.stage.name}-{g[0][0]:05d}x{len(g)}-{self.token}-{self.rounds}" for g in groups]
        futures = self.client.map(shards_on_worker, groups, stage=self.stage, root=self.root,
                                  options=self.options, key=keys, pure=False, **self.where)
        self.groups.update(zip(futures, groups))
        return futures
