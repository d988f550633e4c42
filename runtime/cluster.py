"""Dask clusters the runs use: a LocalCluster bound to this machine, or an existing scheduler.

Every cluster xmdata starts speaks mutual TLS (`tls://`, owner_only.py): a client, worker or
scheduler without the cluster's certificate is refused. Every port is on 127.0.0.1 unless
XMDATA_BIND says otherwise. The dashboard is off unless asked for (`--dashboard`), and then on
127.0.0.1 only; off, the scheduler's and workers' HTTP servers answer /health and nothing else
(no metrics, task names or proxy). A worker holds one copy of each model and runs one shard at a
time, so processes, not threads, give the parallelism; each worker's torch/BLAS gets its share of
the cores (no oversubscription).
"""
from __future__ import annotations

import contextvars
import logging
import os
import sys
from typing import TYPE_CHECKING

from . import settings

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # owner_only imports the contract (pyarrow): not for `xmdata --help`
    from .owner_only import DaskCredentials, DaskTarget

# A single-threaded worker is handed one shard at a time, none queued behind it (Dask's default
# saturation 1.1 queues a second): a shard that kills its worker then takes no innocent queued
# shard with it, which Dask would count towards that shard's three allowed deaths.
ONE_SHARD_A_WORKER = {"distributed.scheduler.worker-saturation": 1.0}
HEALTH_ONLY = {"distributed.scheduler.http.routes": ["distributed.http.health"],
               "distributed.worker.http.routes": ["distributed.http.health"]}
DASHBOARD_HOST = "127.0.0.1"  # whatever XMDATA_BIND says: its pages are not authenticated


def bind_host() -> str:
    return settings.BIND.get()


# The cores a shard function may use for work of its own beside its model's threads (the scoring stage's
# image decoders): set by the in-process executor, where the shard runs alone on this machine; unset on a
# worker, whose share is its OMP_NUM_THREADS (start_local_cluster) or, on a cluster xmdata did not start,
# its CPU affinity.
SHARD_CORES: contextvars.ContextVar[int | None] = contextvars.ContextVar("xmdata_shard_cores", default=None)


def shard_cores() -> int:
    """The cores a shard running in this process may keep busy: SHARD_CORES, else this worker's
    share (OMP_NUM_THREADS), else its CPU affinity."""
    return SHARD_CORES.get() or settings.OMP_NUM_THREADS.get() or len(os.sched_getaffinity(0))


def gpu_worker_cores() -> int | None:
    """On a Dask worker: the cores of this machine left after the other workers' running tasks, shared
    among this machine's GPU workers running one (this worker counted); None outside a worker, or when
    the scheduler does not answer (the caller's own default then). Read from the scheduler when a
    shard starts (`Client.scheduler_info`, `Client.processing`): a scoring run alone on a GPU machine
    decodes with every core, one beside a build's CPU stages with what they leave."""
    if "distributed" not in sys.modules:  # nothing imported Dask: not a worker (an in-process shard)
        return None
    from distributed import get_client, get_worker

    try:
        worker = get_worker()
    except ValueError:  # not in a worker's task
        return None
    try:
        client = get_client()
        return cores_left(client.scheduler_info(n_workers=-1)["workers"], client.processing(), worker.address,
                          len(os.sched_getaffinity(0)))
    except (OSError, TimeoutError) as exc:  # Dask's comm errors are OSErrors
        log.warning("the scheduler did not say which workers are busy (%s): decoding with this worker's share", exc)
        return None


def cores_left(workers: dict[str, dict], processing: dict[str, list], me: str, cores: int) -> int:
    """gpu_worker_cores' rule over the scheduler's view: `workers` as `scheduler_info()["workers"]`
    (host, nthreads, resources), `processing` as `Client.processing()`, `cores` the machine's. A CPU
    worker running a task holds its share of the machine (its threads, or cores ÷ the machine's CPU
    workers, as start_local_cluster gives each its torch threads and decoders: the larger); the rest
    goes to its GPU workers running one, in equal parts; at least 1."""
    from .placement import GPU

    host = (workers.get(me) or {}).get("host")
    here = {address: info for address, info in workers.items() if info.get("host") == host}
    gpu = {address for address, info in here.items() if (info.get("resources") or {}).get(GPU)}
    share = cores // max(1, len(here) - len(gpu))
    running = [address for address in here if processing.get(address) or address == me]
    held = sum(max(int(here[address].get("nthreads") or 1), share) for address in running if address not in gpu)
    return max(1, (cores - held) // max(1, len([a for a in running if a in gpu])))


def worker_threads(n_workers: int) -> int:
    """The BLAS/torch threads one worker gets: its share of the cores."""
    return max(1, (os.cpu_count() or 1) // max(1, n_workers))


def default_workers() -> int:
    return max(1, os.cpu_count() or 1)


def start_local_cluster(n_workers: int | None = None, memory_limit: str = "auto",
                        credentials: DaskCredentials | None = None, dashboard: bool = False):
    """A LocalCluster of single-threaded worker processes, plus one per visible GPU that advertises
    GPU=1 (placement.py) — dask-cuda's LocalCUDACluster for those when installed (cuda_cluster.py);
    returns (cluster, client). `credentials`: the service's; a run's own cluster gets new ones, in
    memory only. Its workers are spawned, not daemonic (worker_start.py)."""
    import dask
    from distributed import Client, LocalCluster

    from .cuda_cluster import local_cluster_plan, start_cuda_cluster
    from .owner_only import new_dask_credentials
    from .placement import add_gpu_workers, gpu_ids
    from .worker_start import prepare

    workers = n_workers or default_workers()
    threads = str(worker_threads(workers))
    host = bind_host()
    security = (credentials or new_dask_credentials()).security()
    common = {"host": host, "protocol": "tls://", "security": security, "memory_limit": memory_limit,
              "dashboard_address": f"{DASHBOARD_HOST}:0", "scheduler_kwargs": {"dashboard": dashboard},
              "env": {settings.OMP_NUM_THREADS.name: threads, "MKL_NUM_THREADS": threads}, **prepare()}
    plan = local_cluster_plan(gpu_ids(), workers)
    with dask.config.set({**ONE_SHARD_A_WORKER, **({} if dashboard else HEALTH_ONLY)}):
        if plan.cuda:
            cluster = start_cuda_cluster(plan, **common)
        else:
            cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, **common)
            if plan.gpus:  # plus one worker per GPU, for the stages whose model runs on CUDA
                add_gpu_workers(cluster, list(plan.gpus))
        apply_worker_spec(cluster)  # the workers added to its spec (GPU, or dask-cuda's CPU ones) start
    return cluster, Client(cluster, security=security, set_as_default=False)


def apply_worker_spec(cluster) -> None:
    """Returns once the cluster's workers are what its `worker_spec` says: the ones taken out of it
    retired and closed, the ones put in started. Awaiting a SpecCluster is Dask's documented way to
    align it with its spec (`scale` only schedules that and returns)."""
    async def aligned():
        await cluster

    cluster.sync(aligned)


def connect(target: DaskTarget, timeout: float = 30.0):
    from distributed import Client

    return Client(target.address, security=target.security(), timeout=timeout, set_as_default=False)


def close_local_cluster(cluster, client) -> None:
    """Our client, then the cluster (workers, then scheduler): measured 0.1 s, and no worker is
    force-killed (DaskTaskRunner's teardown waited 4 s and killed every worker)."""
    client.close()
    cluster.close(timeout=20)
