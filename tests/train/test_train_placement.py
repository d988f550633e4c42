"""Where a training run goes: a CUDA model's run to a GPU worker of the run's cluster, with the resource
the stages' shards use; otherwise this process."""
from __future__ import annotations

import pytest


def _where():
    import os

    return os.getpid()


@pytest.fixture(scope="module")
def gpu_cluster():
    from distributed import Client, LocalCluster

    cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=True, resources={"GPU": 1},
                           dashboard_address=None)
    client = Client(cluster)
    yield cluster, client
    client.close()
    cluster.close()


def test_a_cuda_run_asks_for_a_gpu_worker_and_a_cpu_run_does_not(gpu_cluster):
    from xmdata.runtime.placement import needs_gpu, placement

    _, client = gpu_cluster  # the stages' rule, asked with a run's device: no stand-in Stage
    assert placement(client, needs_gpu("cuda")) == {"resources": {"GPU": 1}}
    assert placement(client, needs_gpu("cuda:1")) == {"resources": {"GPU": 1}}
    assert "resources" not in placement(client, needs_gpu("cpu"))


def test_a_run_goes_to_the_cluster_only_when_it_should(gpu_cluster):
    import os

    from xmdata.runtime.session import execution_session
    from xmdata.tasks.train.placement import run_placed

    cluster, _ = gpu_cluster
    with execution_session("inprocess", address=cluster.scheduler_address):
        assert run_placed(_where, "cuda") == (os.getpid(), "in this process")
    with execution_session("auto", address=cluster.scheduler_address):
        assert run_placed(_where, "cpu") == (os.getpid(), "in this process")  # one task: nothing to ship
        pid, where = run_placed(_where, "cuda")
    assert where == "on a GPU worker" and pid != os.getpid()
