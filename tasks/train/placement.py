"""Where a training run goes: one task, so it runs in this process unless its model is on CUDA and the
run has a cluster (or `--executor dask`), where it is submitted by the stages' rule
(runtime/placement.py): with resources={"GPU": 1} when some worker advertises a GPU."""
from __future__ import annotations

from typing import Callable, TypeVar

T = TypeVar("T")


def run_placed(fn: Callable[..., T], device: str, *args) -> tuple[T, str]:
    """fn(*args), here or on the run's cluster; and where it ran, in words."""
    from xmdata.runtime.placement import needs_gpu, placement
    from xmdata.runtime.session import current_session

    session = current_session()
    gpu = needs_gpu(device)
    if session.executor == "inprocess" or not (session.executor == "dask" or (gpu and session.has_warm_cluster)):
        return fn(*args), "in this process"
    client = session.client()
    where = placement(client, gpu)
    result = client.submit(fn, *args, pure=False, **where).result()
    return result, "on a GPU worker" if where.get("resources") else "on the cluster"
