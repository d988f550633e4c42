"""Shared fixtures: tiny real models built once per run; Prefect and Dask state kept in temp dirs."""
from __future__ import annotations

import os
import tempfile

import pytest

# Before any Prefect import: keep its database and settings out of ~/.prefect.
_STATE = tempfile.mkdtemp(prefix="xmdata-test-")
os.environ.setdefault("PREFECT_HOME", os.path.join(_STATE, "prefect"))
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("DASK_TEMPORARY_DIRECTORY", os.path.join(_STATE, "dask"))
os.environ.setdefault("XMDATA_CACHE", os.path.join(_STATE, "cache"))  # the demo's tiny models, built once


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """{backend: ModelSpec} for every backend, built offline with the real classes — the same
    folder the demo runs use (XMDATA_CACHE), so they are built once per test run."""
    from xmdata.models.tiny import cached_tiny_models

    return cached_tiny_models(seed=0)


@pytest.fixture(scope="session")
def prefect_server():
    """One Prefect server for the whole test run, as the CLI would start for one build."""
    from xmdata.runtime.prefect_api import start_prefect_server, stop_process_group

    proc, url = start_prefect_server(log_path=os.path.join(_STATE, "prefect-server.log"))
    os.environ["PREFECT_API_URL"] = url  # inherited by every CLI run and Dask worker we start
    yield url
    os.environ.pop("PREFECT_API_URL", None)
    stop_process_group(proc)


@pytest.fixture(scope="session")
def cli_env(prefect_server):
    """Environment for running `xmdata` as a user would, against the shared test server."""
    return {**os.environ, "PREFECT_API_URL": prefect_server}


def pytest_collection_modifyitems(config, items):
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in gpu_items:
            item.add_marker(skip)
