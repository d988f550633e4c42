"""The workers of a cluster xmdata starts (runtime/worker_start.py): spawned fresh, not daemonic (a
worker may start the image readers' decoder processes), torch at the worker's share of the cores, and
a user's own Dask preloads kept, before ours."""
from __future__ import annotations

import os

import dask
import pytest

from xmdata.runtime.cluster import close_local_cluster, start_local_cluster, worker_threads
from xmdata.runtime.worker_start import worker_preload


def worker_facts() -> dict:
    import multiprocessing

    import torch

    return {"daemon": multiprocessing.current_process().daemon, "torch_threads": torch.get_num_threads(),
            "omp": os.environ.get("OMP_NUM_THREADS"), "parent": open(f"/proc/{os.getppid()}/cmdline").read()}


@pytest.mark.slow  # a cluster of its own
def test_a_worker_may_have_children_and_runs_torch_at_its_share():
    cluster, client = start_local_cluster(1)  # one worker: its share is every core
    try:
        (facts,) = client.run(worker_facts).values()
    finally:
        close_local_cluster(cluster, client)
    assert facts["daemon"] is False
    assert facts["torch_threads"] == int(facts["omp"]) == worker_threads(1)
    assert "forkserver" not in facts["parent"]  # its nanny spawned it


def test_a_users_preloads_come_first_ours_after():
    with dask.config.set({"distributed.worker.preload": ["mine"], "distributed.worker.preload-argv": [["--x"]]}):
        assert worker_preload() == {"preload": ["mine", "xmdata.runtime.worker_start"], "preload_argv": [["--x"], []]}
    with dask.config.set({"distributed.worker.preload": "mine", "distributed.worker.preload-argv": ["--x"]}):
        assert worker_preload() == {"preload": ["mine", "xmdata.runtime.worker_start"], "preload_argv": ["--x"]}
