"""The local cluster of a GPU machine: dask-cuda's LocalCUDACluster when it is installed, plus CPU
workers for the CPU stages.

LocalCUDACluster gives one worker per GPU, pinned to it (CUDA_VISIBLE_DEVICES rotated per worker),
with dask-cuda's CPU affinity and device-memory handling; each also advertises GPU=1, so the stages
whose model runs on CUDA go there (placement.py). The CPU workers see no GPU at all. Without
dask-cuda (or with XMDATA_GPU_WORKERS, whose "GPUs" are only a resource for the CPU tests) the plain
LocalCluster gets the same shape from placement.add_gpu_workers. dask_cuda is imported only when
such a cluster starts: `find_spec` tells whether it is there without importing it.
"""
from __future__ import annotations

import importlib.util
from dataclasses import dataclass

from . import settings
from .placement import GPU


@dataclass(frozen=True)
class LocalClusterPlan:
    cuda: bool  # LocalCUDACluster for the GPU workers, else a LocalCluster with GPU workers added
    gpus: tuple[str, ...]  # one worker per device
    cpu_workers: int


def local_cluster_plan(gpus: list[str], cpu_workers: int, dask_cuda_installed: bool | None = None) -> LocalClusterPlan:
    """The decision, in one place: dask-cuda for real CUDA devices when it is installed."""
    if dask_cuda_installed is None:
        dask_cuda_installed = importlib.util.find_spec("dask_cuda") is not None
    real = bool(gpus) and settings.GPU_WORKERS.get() is None
    return LocalClusterPlan(cuda=real and dask_cuda_installed, gpus=tuple(gpus), cpu_workers=cpu_workers)


def start_cuda_cluster(plan: LocalClusterPlan, host: str, protocol: str, security, dashboard_address: str,
                       memory_limit: str, env: dict, scheduler_kwargs: dict, preload: list[str] | None = None,
                       preload_argv: list | None = None):
    """LocalCUDACluster, one single-threaded worker per GPU advertising GPU=1, and the CPU workers in its
    spec (started when the caller applies it: cluster.apply_worker_spec); `preload`, `preload_argv`: the workers' start hooks (worker_start.prepare)."""
    hooks = {k: v for k, v in (("preload", preload), ("preload_argv", preload_argv)) if v is not None}  # none: Dask's
    from dask_cuda import LocalCUDACluster
    from distributed import Nanny

    cluster = LocalCUDACluster(
        CUDA_VISIBLE_DEVICES=",".join(plan.gpus), n_workers=len(plan.gpus), threads_per_worker=1,
        host=host, protocol=protocol, security=security, dashboard_address=dashboard_address, scheduler_kwargs=scheduler_kwargs,
        memory_limit=memory_limit, resources={GPU: 1}, **hooks)  # its workers' env is its own: the device each
    for index in range(plan.cpu_workers):
        cluster.worker_spec[f"cpu-{index}"] = {"cls": Nanny, "options": {
            "nthreads": 1, "memory_limit": memory_limit, "host": host, "name": f"cpu-{index}",
            "protocol": protocol, "security": security, **hooks,
            "env": {**env, settings.CUDA_VISIBLE_DEVICES.name: ""}}}  # a CPU worker never touches a GPU
    return cluster
