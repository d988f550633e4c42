"""Shared fixtures: tiny real models built once per run; Prefect and Dask state kept in temp dirs."""
from __future__ import annotations

import fcntl
import importlib
import os
import shutil
import tempfile
from pathlib import Path

import pytest

# Before any Prefect import: keep its database and settings out of ~/.prefect. One folder per test
# run, made by the first pytest process and inherited by xdist's workers (`./run test` runs -n auto):
# the tiny models are built once, in the run's shared cache, and the workers share one Prefect home
# and so one service (a service is keyed by PREFECT_HOME: started once, its workers' imports and
# model loads paid once, ~40 CPU-s); each worker has its own Dask scratch.
_RUN = os.environ.setdefault("XMDATA_TEST_RUN", tempfile.mkdtemp(prefix="xmdata-test-"))
_OWN = os.path.join(_RUN, os.environ.get("PYTEST_XDIST_WORKER", "main"))
os.makedirs(_OWN, exist_ok=True)  # Prefect makes its home folder, but not the folders above it


def _default(name: str, value: str) -> None:
    """Set unless the developer set it; a value under _RUN was the parent pytest's default."""
    if os.environ.get(name, _RUN).startswith(_RUN):
        os.environ[name] = value


_default("PREFECT_HOME", os.path.join(_RUN, "prefect"))
_default("DASK_TEMPORARY_DIRECTORY", os.path.join(_OWN, "dask"))
_default("XMDATA_CACHE", os.path.join(_RUN, "cache"))  # the demo's tiny models, built once
os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
os.environ.setdefault("XMDATA_IDLE_MINUTES", "15")  # a service a crashed test run left stops by itself
os.environ.pop("PREFECT_API_URL", None)  # the service's server, never a developer's
# hf_xet is installed (huggingface_hub's dependency): no test takes the Xet path, which the Hub stand-in
# does not serve (tests/support/hub_standin.py). huggingface_hub's own setting, read when it is imported.
os.environ.setdefault("HF_HUB_DISABLE_XET", "1")


@pytest.fixture(scope="session", autouse=True)
def _prefect_logs_to_the_run_stderr():
    """Prefect's console log handler keeps the sys.stderr it found when prefect was first imported.
    Imported inside a test that captures with capsys, that is the test's buffer, closed when the
    test ends: every later Prefect or Dask log line then prints "--- Logging error ---" and a
    traceback into whichever test runs. Imported here, before any test, it keeps pytest's own."""
    importlib.import_module("prefect.main")  # configures logging (a plain `import prefect` does not)


@pytest.fixture(autouse=True)
def _environment_of_its_own():
    """What a test (or a CLI run inside it: XMDATA_PROGRESS, OMP_NUM_THREADS…) sets in os.environ
    ends with it; the session fixtures, set up before, stay."""
    saved = dict(os.environ)
    yield
    if os.environ != saved:
        os.environ.clear()
        os.environ.update(saved)


@pytest.fixture(autouse=True)
def _memo_of_its_own(tmp_path_factory, _environment_of_its_own):
    """Each test has a memo of model work of its own (runtime/memo.py): a test that puts a fake model
    in place of a real one must neither be served another test's results nor leave its fakes'."""
    os.environ["XMDATA_MEMO"] = str(tmp_path_factory.mktemp("memo"))


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory):
    """{backend: ModelSpec} for every backend, built offline with the real classes — the same
    folder the demo runs use (XMDATA_CACHE), so they are built once per test run."""
    from xmdata.models.tiny import cached_tiny_models

    return cached_tiny_models(seed=0)


@pytest.fixture(scope="session")
def service():
    """The xmdata service (Prefect server + warm Dask cluster) for the whole test run, started as
    the first CLI command would start it by whichever xdist worker asks first (the others find it),
    and stopped when the run ends (pytest_sessionfinish, in the process that started the workers)."""
    from xmdata.service.service_start import ensure_service

    return ensure_service(quiet=True)


def pytest_sessionfinish(session):
    if os.environ.get("PYTEST_XDIST_WORKER"):
        return  # a worker: the others may still use the service
    from xmdata.service.service_stop import stop_service

    stop_service()  # nothing when no test started it


@pytest.fixture(scope="session")
def prefect_server(service):
    """The service's Prefect API, for tests that run flows in this process. Prefect reads its
    settings when first imported, so the URL is set in its settings context as well as the
    environment: without that, a flow run here would start Prefect's temporary server (~10 s)."""
    from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

    from xmdata.runtime.prefect_api import AUTH_ENV, flush_api_logs
    from xmdata.service.service import prefect_auth

    auth = prefect_auth(service)  # found as every process of the owner finds it
    os.environ.update({"PREFECT_API_URL": service["prefect_api_url"], AUTH_ENV: auth})
    with temporary_settings(updates={PREFECT_API_URL: service["prefect_api_url"], PREFECT_API_AUTH_STRING: auth}):
        yield service["prefect_api_url"]
        flush_api_logs()  # while the service's server still listens
    os.environ.pop("PREFECT_API_URL", None)
    os.environ.pop(AUTH_ENV, None)


@pytest.fixture(scope="session")
def cluster_env(service):
    """Environment for running `xmdata` as a user would: the CLI finds the service by itself."""
    # XMDATA_MEMO: each test's own (_memo_of_its_own), not the one of the test that made this
    return {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "XMDATA_EXECUTOR", "XMDATA_MEMO")}


@pytest.fixture(scope="session")
def cli_env(cluster_env):
    """The same, for tests that do not test the cluster: every stage runs in the CLI's process."""
    return {**cluster_env, "XMDATA_EXECUTOR": "inprocess"}


@pytest.fixture(scope="session")
def demo_release(cli_env):
    """The demo release, built once per test run (in-process; the cluster tests compare with it) by
    whichever xdist worker asks first; the others wait on the lock and read it. Tests only read it."""
    from support.demo_release import run_demo

    out = os.path.join(_RUN, "demo")
    with open(out + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not os.path.exists(out + ".built"):
            shutil.rmtree(out, ignore_errors=True)
            run_demo(out, cli_env)
            open(out + ".built", "w").close()
    return Path(out)


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    """A one-host SLURM (munged, slurmctld, slurmd; support/slurm_cluster.py) for a test module, its
    files in a temp folder, stopped after; the node is idle when a test gets it. Without slurm-wlm
    and munge (or root) the test skips, or fails with XMDATA_REQUIRE_SLURM=1 (CI)."""
    from support.slurm_cluster import missing, start_slurm

    from xmdata.runtime import settings

    reason = missing()
    if reason:
        (pytest.fail if settings.REQUIRE_SLURM.get() else pytest.skip)(f"SLURM: {reason}")
    cluster = start_slurm(str(tmp_path_factory.mktemp("slurm")))
    yield cluster
    cluster.stop()


def pytest_collection_modifyitems(config, items):
    # The long end-to-end tests first: spread over xdist's workers from the start (./run's `--dist
    # loadgroup --no-loadscope-reorder` hands them out in this order), they do not leave one worker
    # finishing a minute-long test while the other has nothing left. The demo release is built by the first test that needs it, put
    # first; the other tests that need it come after the long ones that do not, so that no worker
    # starts by waiting ~40 s on the demo's lock.
    def needs_demo(item):
        return "demo_release" in getattr(item, "fixturenames", ())

    items.sort(key=lambda item: ("browser" not in item.keywords, "slow" not in item.keywords, needs_demo(item)))
    builder = next((item for item in items if needs_demo(item) and "slow" in item.keywords), None)
    if builder is not None:
        items.remove(builder)
        items.insert(0, builder)
    gpu_items = [item for item in items if "gpu" in item.keywords]
    if not gpu_items:
        return
    import torch

    if not torch.cuda.is_available():
        skip = pytest.mark.skip(reason="needs a CUDA device")
        for item in gpu_items:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def s3(tmp_path_factory):
    """A real S3 server (SeaweedFS `weed server -s3`) on 127.0.0.1 for the whole run, its data in a
    temp folder, with an empty bucket `xmdata`; stopped at the end."""
    from support.s3_server import start_s3_server

    server = start_s3_server(str(tmp_path_factory.mktemp("s3")))
    server.filesystem().mkdir("xmdata")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def s3_env(cli_env, s3):
    """cli_env plus the usual AWS variables pointing at that server."""
    return {**cli_env, **s3.env()}
