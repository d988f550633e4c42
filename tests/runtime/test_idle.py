"""Idle means small: an idle worker gives its models back (the service retiring its idle workers and
calling them back, and stopping once its home is deleted: tests/service/test_service.py)."""
import time

import pytest

pytestmark = pytest.mark.slow
IDLE_S = 3  # XMDATA_MODEL_IDLE_MINUTES=0.05
BALLAST_MB = 200


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
