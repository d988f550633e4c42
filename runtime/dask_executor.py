"""Shards on a Dask cluster, a few to a Dask task when they are cheap.

A Dask task costs ~10 CPU-ms all told on a 2-core machine (client, scheduler and worker: measured
with bench/orchestration.py), more than a trivial shard's own work. So the first shards go one to
a task, and once one a worker thread is back, their measured time sets how many of the rest share
one: about TASK_S of work a task, with at least TASKS_PER_THREAD tasks per worker thread for
balance. A model stage's shards take seconds each and keep one to a task.

A worker lost mid-task has the task rerun elsewhere, where its finished shards are found by their
records (a hash, not the work). A task that keeps killing workers (KilledWorker) has its unfinished
shards run again one to a task, so that only the shard that kills is recorded as failed.

A cluster with no worker that can run the stage (none at all; no GPU worker for a GPU stage) for
XMDATA_NO_WORKER_SECONDS — every worker died and its nanny could not start another ("Failed to
restart worker"), or none ever came — would leave the stage waiting forever: its unfinished shards
fail instead, in one line naming the cluster and where its workers log, and a rerun finishes them.
A cluster that starts slowly, or scales from zero, has that long. The count is asked of the
scheduler only while nothing has come back for WATCH_S, never per task.
"""
from __future__ import annotations

import statistics
import time
import uuid
from typing import Iterator

from . import settings
from .executors import Outcome, failure_reason, is_input_error, shard_outcome
from .faults import SchedulerLost, killed_worker_reason
from .placement import placement
from .process import gather_new_units, run_shard_job
from .side_by_side import raise_if_stopping
from .stage import Stage
from .storage import storage_options

Job = tuple[int, str]
TASK_S = 0.5
TASKS_PER_THREAD = 4
WATCH_S = 2.0  # nothing back this long: the scheduler is asked how many workers it has


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

    def __init__(self, client, worker_log: str = "the workers' own output, where they were started"):
        """`worker_log`: where the cluster's workers write their logs, named when none is left."""
        self.client, self.worker_log = client, worker_log

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
            for batch in self._batches(running, tasks):
                if batch is None:  # no worker left: every shard not back yet fails, for one reason
                    reason = no_worker_reason(self.client, self.worker_log, bool(tasks.where.get("resources")))
                    yield from ((index, None, reason) for index, _ in jobs if index not in returned)
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
        except Exception as exc:
            if not isinstance(exc, SchedulerLost) and scheduler_lost(self.client, exc):  # a call to it failed
                raise SchedulerLost(self.client.scheduler.address, stage.name) from exc
            raise
        finally:  # Ctrl-C or an input error: nothing of this stage keeps running on the cluster
            if self.client.status == "running":  # a lost scheduler has nothing left to cancel
                self.client.cancel([f for f in tasks.groups if not f.done()])

    def gather_new_units(self, stage: Stage, paths: list[str]) -> dict:
        """The pending shards' new units computed together first, in one task on a worker that can
        run the stage (process.gather_new_units)."""
        future = self.client.submit(gather_new_units, stage, paths, storage_options() or None, pure=False,
                                    key=f"{stage.name}-gather-{uuid.uuid4().hex[:8]}", **placement(self.client, stage.gpu))
        try:
            return future.result()
        finally:  # Ctrl-C: nothing of it keeps running on the cluster
            if not future.done():
                self.client.cancel([future])
            future.release()

    def _batches(self, running, tasks: "_Tasks") -> Iterator[list | None]:
        """`running.batches()`, and None once the cluster has had no worker for the stage for
        XMDATA_NO_WORKER_SECONDS: asked of the scheduler only after WATCH_S with nothing back."""
        limit = settings.NO_WORKER_SECONDS.get()
        seen = asked = time.monotonic()  # the clock starts with the stage: a cluster may be starting
        while not running.is_empty():
            raise_if_stopping()  # the command was interrupted while this ran as a part of a build: cancel (run's finally)
            if self.client.status != "running":  # the scheduler's connection is lost: Dask reconnects for 30 s
                raise SchedulerLost(self.client.scheduler.address, tasks.stage.name)
            if running.has_ready():
                yield running.next_batch(block=False)
                seen = asked = time.monotonic()  # something came back: a worker was there
                continue
            with running.thread_condition:  # woken by a finished future, as Dask's own loop is
                running.thread_condition.wait(timeout=0.1)
            now = time.monotonic()
            if now - asked < WATCH_S or running.has_ready():
                continue
            asked = now
            if tasks.workers_for_stage():
                seen = now
            elif now - seen >= limit:
                yield None
                return

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
            if self.client.status != "running":  # the connection is lost (Dask reconnects, then closes)
                raise SchedulerLost(self.client.scheduler.address, tasks.stage.name)
            reason = "cancelled: the cluster dropped it (scheduler lost or shut down)"
            yield from ((index, None, reason) for index, _ in group)
            return
        exc = future.exception()
        if is_input_error(exc):
            raise exc
        if len(group) > 1:  # which of its shards kills workers? each alone tells (finished ones: a hash)
            running.update(tasks.submit([[job] for job in group]))
        elif type(exc).__name__ == "KilledWorker":  # the stage and shard are named with it (ShardsFailed)
            # The limits the stage started with: the killed worker is gone from the scheduler by now.
            limits = worker_memory_limits(self.client) or tasks.memory_limits
            yield group[0][0], None, killed_worker_reason(limits)
        else:
            yield group[0][0], None, failure_reason(exc)


def scheduler_lost(client, exc: BaseException) -> bool:
    """Whether `exc`, raised by a call to the scheduler, says its connection is gone."""
    from distributed.comm import CommClosedError

    return client.status != "running" or isinstance(exc, CommClosedError)


def worker_memory_limits(client) -> list[int]:
    """Each worker's memory limit, in bytes (0: none), as the scheduler knows them; [] when it does not answer."""
    try:
        return [w.get("memory_limit") or 0 for w in client.scheduler_info(n_workers=-1)["workers"].values()]
    except Exception:  # noqa: BLE001 - the reason is said without the figure
        return []


def no_worker_reason(client, worker_log: str, gpu: bool) -> str:
    return (f"no {'GPU ' if gpu else ''}worker on the cluster {client.scheduler.address} for "
            f"{settings.NO_WORKER_SECONDS.get():g} s ({settings.NO_WORKER_SECONDS.name}): its workers died "
            f"and none came back, or none came (worker log: {worker_log})")


class _Tasks:
    """Submits groups of shards, remembering which future holds which."""

    def __init__(self, client, stage: Stage, root: str):
        self.client, self.stage, self.root = client, stage, root
        self.options = storage_options() or None  # a worker elsewhere shares only the store with us
        self.where = placement(client, stage.gpu)  # GPU stages on GPU workers, when there are any
        self.memory_limits = worker_memory_limits(client)  # named if a shard keeps killing workers
        self.token = uuid.uuid4().hex[:8]
        self.groups: dict = {}
        self.rounds = 0

    def workers_for_stage(self) -> int:
        """The workers the scheduler has now that can run the stage's tasks (GPU ones for a GPU stage)."""
        if not self.where.get("resources"):
            return self.client.scheduler_info(n_workers=0)["n_workers"]
        workers = self.client.scheduler_info(n_workers=-1)["workers"].values()
        return sum(all((w.get("resources") or {}).get(k, 0) >= v for k, v in self.where["resources"].items())
                   for w in workers)

    def submit(self, groups: list[list[Job]]) -> list:
        # One `map` a round, not a `submit` a task: one graph message, the stage pickled once.
        self.rounds += 1
        keys = [f"{self.stage.name}-{g[0][0]:05d}x{len(g)}-{self.token}-{self.rounds}" for g in groups]
        futures = self.client.map(shards_on_worker, groups, stage=self.stage, root=self.root,
                                  options=self.options, key=keys, pure=False, **self.where)
        self.groups.update(zip(futures, groups))
        return futures
