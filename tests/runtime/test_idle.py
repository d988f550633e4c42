"""Idle means small: an idle worker gives its models back, the service retires its idle workers and
calls them back for the next command, and a service whose home is deleted stops itself."""
import contextlib
import json
import os
import shutil
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.slow
XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")
IDLE_S = 3  # XMDATA_MODEL_IDLE_MINUTES=0.05
BALLAST_MB = 200


def xmdata(env, *args, timeout=300):
    return subprocess.run([XMDATA, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture
def own_env(tmp_path):
    """A service of its own (its own Prefect home and state folder), never the test session's; its
    workers retire after IDLE_S seconds without a task."""
    from xmdata.runtime.settings import MODEL_IDLE_MINUTES

    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "XMDATA_EXECUTOR")}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), XMDATA_CACHE=str(tmp_path / "cache"),
               **{MODEL_IDLE_MINUTES.name: str(IDLE_S / 60)})
    yield env
    xmdata(env, "down")


def state_of(env):
    folder = os.path.join(env["XMDATA_CACHE"], "service")
    (name,) = [n for n in os.listdir(folder) if n.endswith(".json")]
    return json.load(open(os.path.join(folder, name)))


def workers(service):
    """The service's worker processes (spawned by its nannies, which live in the service's process)."""
    found = []
    for proc in service.children():
        with contextlib.suppress(psutil.Error):  # one that exits meanwhile, or a zombie not yet reaped: gone
            if proc.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(proc.cmdline()):
                found.append(proc)
    return found


def wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.2)


class Ballast:
    """A model of BALLAST_MB of weights, so that releasing it shows in the process's RSS (the tiny
    models and the bundled lid.176.ftz weigh a few MB)."""

    def __init__(self, spec):
        self.spec = spec

    def load(self):
        import numpy

        self.weights = numpy.ones(BALLAST_MB * 2**18, dtype=numpy.float32)


def load_and_hold(seconds):
    """In a worker: load the ballast as a shard would, keep running `seconds`, say what was held."""
    import psutil

    from xmdata.models import registry
    from xmdata.models.base import ModelSpec

    registry.BACKENDS["ballast"] = {"numpy": "test_idle:Ballast"}  # tests/ is on the worker's sys.path
    before = psutil.Process().memory_info().rss
    registry.get_model("ballast", ModelSpec("numpy", "ballast"))
    loaded = psutil.Process().memory_info().rss
    time.sleep(seconds)  # a shard longer than the idle time: its model is in use, not idle
    return before, loaded, [m["model"] for m in registry.loaded_models()]


def held():
    import psutil

    from xmdata.models import registry

    return [m["model"] for m in registry.loaded_models()], registry.MODELS.released, psutil.Process().memory_info().rss


def test_an_idle_worker_drops_its_models_and_its_memory_falls(monkeypatch):
    from xmdata.runtime.cluster import close_local_cluster, start_local_cluster
    from xmdata.runtime.settings import MODEL_IDLE_MINUTES

    monkeypatch.setenv(MODEL_IDLE_MINUTES.name, str(IDLE_S / 60))  # the worker processes inherit it
    cluster, client = start_local_cluster(1)
    try:
        before, loaded, during = client.submit(load_and_hold, 2 * IDLE_S, pure=False).result()
        assert during == ["ballast"] and loaded - before > 0.9 * BALLAST_MB * 2**20
        time.sleep(IDLE_S + 2)  # looked at every IDLE_S / 4
        (models, released, rss), = client.run(held).values()
        assert models == [] and released == [("ballast", "ballast")]
        assert rss < loaded - 0.9 * BALLAST_MB * 2**20, (before, loaded, rss)  # given back to the system
    finally:
        close_local_cluster(cluster, client)


def test_idle_workers_retire_come_back_and_the_service_stops_once_its_home_is_deleted(own_env, tmp_path):
    from xmdata.data import sample_path

    def lid(out):
        run = xmdata(own_env, "identify-language", sample_path("captions.jsonl"), "--out", str(out), "--executor", "dask")
        assert run.returncode == 0, run.stderr[-2000:]
        return {name: open(os.path.join(out, "language_id", "data", name), "rb").read()
                for name in sorted(os.listdir(os.path.join(out, "language_id", "data")))}

    first = lid(tmp_path / "first")
    state = state_of(own_env)
    root = psutil.Process(state["pid"])
    wait_for(lambda: state_of(own_env)["retired"] and not workers(root))
    status = xmdata(own_env, "status")
    assert status.returncode == 0 and "retired" in status.stdout and "Prefect server" in status.stdout, status.stdout
    second = lid(tmp_path / "second")  # the workers called back: same shards, same bytes
    assert second == first and state_of(own_env)["pid"] == state["pid"]
    log = open(state["log"]).read()
    assert "workers retired" in log and "workers back in" in log

    # A service whose home is deleted stops itself (the same service: one start fewer for the suite)
    tree = [root, *root.children(recursive=True)]
    shutil.rmtree(own_env["PREFECT_HOME"], ignore_errors=True)  # the server may write to it meanwhile
    gone, alive = psutil.wait_procs(tree, timeout=20)  # noticed within a second, then a clean stop
    assert not alive, alive
