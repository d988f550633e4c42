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


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """{backend: ModelSpec} for every backend, built offline with the real classes."""
    from xmdata.models.tiny import build_tiny_models

    return build_tiny_models(tmp_path_factory.mktemp("tiny-models"), seed=0)
