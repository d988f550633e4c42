"""Workers forked from a preloaded forkserver (runtime/worker_start.py) are the workers spawn gives:
the same torch threads (their share of the cores, though torch was imported before their environment
was set), the same hash seed, the same bytes out of the tiny models; the forkserver touches no CUDA
and runs no thread of its own but jemalloc's; a run's own cluster does not import torch."""
from __future__ import annotations

import io
import multiprocessing
import multiprocessing.forkserver
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from xmdata.runtime.cluster import close_local_cluster, start_local_cluster, worker_threads
from xmdata.runtime.worker_start import forkserver_of, nanny_environment, preload, stop_forkserver

TEXTS = pa.table({"id": ["a", "b", "c"], "caption": ["The dog runs in the house.", "A red cat sees the water.",
                                                     "The child reads a book."]})


@pytest.fixture
def fresh_forkserver():
    """This process's forkserver (one per process, its imports fixed when it starts) stopped before and
    after: the test's cluster starts its own, with the imports it asks for."""
    stop_forkserver()
    yield
    stop_forkserver()


def test_a_forkserver_is_found_stopped_and_started_again_by_public_means():
    """What stop_forkserver stands on, CPython's and not an API (a newer Python may change it): the
    forkserver is this process's child running `from multiprocessing.forkserver import main`, one
    stopped by SIGTERM exits at once, and multiprocessing starts another for the next process."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["json"])
    stop_forkserver()
    multiprocessing.forkserver.ensure_running()
    first = forkserver_of()
    assert first is not None and "json" in " ".join(first.cmdline())
    stop_forkserver()
    assert forkserver_of() is None
    process = context.Process(target=os.getpid)
    process.start()
    process.join(60)
    second = forkserver_of()
    assert process.exitcode == 0 and second is not None and second.pid != first.pid
    stop_forkserver()


def test_the_nanny_environment_is_a_nannys_own(monkeypatch):
    """Dask's rule for what a nanny sets before it starts a worker, written in worker_start.py (Dask's
    function for it is private): the same as a Nanny's public `pre_spawn_env` — a user's value kept, a
    None left out, the hash seed fixed unless the config gives one."""
    import dask
    from distributed import Nanny

    monkeypatch.setenv("MALLOC_TRIM_THRESHOLD_", "12345")
    monkeypatch.delenv("PYTHONHASHSEED", raising=False)  # set in this process by an earlier start_early: it would win
    configured = dask.config.get("distributed.nanny.pre-spawn-environ")
    for extra, seed in (({}, "6640"), ({"PYTHONHASHSEED": "17", "SOME_VARIABLE_UNSET": None}, "17")):
        with dask.config.set({"distributed.nanny.pre-spawn-environ": {**configured, **extra}}):
            nanny = Nanny("tcp://127.0.0.1:1")
            assert nanny_environment() == nanny.pre_spawn_env
        assert nanny.pre_spawn_env["MALLOC_TRIM_THRESHOLD_"] == "12345"
        assert nanny.pre_spawn_env["PYTHONHASHSEED"] == seed and "SOME_VARIABLE_UNSET" not in nanny.pre_spawn_env


def worker_state() -> dict:
    """Run on a worker before any task: what the forkserver gave it, then its threads."""
    import sys

    preloaded = "transformers.models.m2m_100.modeling_m2m_100" in sys.modules
    had_torch = "torch" in sys.modules
    import torch

    parent = f"/proc/{os.getppid()}"
    threads = [open(f"{parent}/task/{t}/comm").read().strip() for t in os.listdir(f"{parent}/task")]
    return {"preloaded": preloaded, "had_torch": had_torch, "torch_threads": torch.get_num_threads(),
            "omp": os.environ.get("OMP_NUM_THREADS"), "hash": hash("xmdata"),
            "forked": "forkserver" in open(f"{parent}/cmdline").read(), "parent_threads": threads,
            "cuda": torch.cuda.is_initialized()}


def translate_and_score(spec, qe_spec) -> bytes:
    """The tiny M2M100's candidates for fr, scored by the tiny COMETKiwi: Arrow IPC bytes."""
    from xmdata.tasks.translation.candidate_scores import candidate_qe_stage
    from xmdata.tasks.translation.params import TranslateParams
    from xmdata.tasks.translation.translate import translate_stage

    translate = translate_stage(TranslateParams(columns=["caption"], targets=["fr"], translator={
        "num_beams": 4, "num_candidates": 2, "max_new_tokens_ratio": 1.0, "max_new_tokens_extra": 4}), spec)
    candidates, _ = translate.fn(TEXTS, translate.params)
    matched = pa.array([True] * candidates.num_rows)  # as if fastText had found fr: QE scores them all
    candidates = candidates.set_column(candidates.schema.get_field_index("lid_match"), "lid_match", matched)
    qe = candidate_qe_stage(qe_spec)
    scored, _ = qe.fn(candidates, qe.params)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, scored.schema) as writer:
        writer.write_table(scored)
    return sink.getvalue()


def on_cluster(monkeypatch, forkserver: bool, models: bool, job=None):
    monkeypatch.setenv("XMDATA_WORKER_FORKSERVER", "on" if forkserver else "off")
    cluster, client = start_local_cluster(1, models=models)  # one worker: its share is every core
    try:
        (state,) = client.run(worker_state).values()
        return state, (client.submit(*job).result() if job else None)
    finally:
        close_local_cluster(cluster, client)


@pytest.mark.slow  # clusters of their own, or the model libraries imported
def test_forked_workers_have_spawned_ones_threads_hash_and_bytes(tiny_models, fresh_forkserver, monkeypatch):
    from xmdata.tasks.translation.options import FilterOptions

    job = (translate_and_score, tiny_models["m2m100"], FilterOptions(qe_model=tiny_models["cometkiwi"].name_or_path).qe_spec())
    spawned, spawned_bytes = on_cluster(monkeypatch, False, True, job)
    forked, forked_bytes = on_cluster(monkeypatch, True, True, job)
    share = worker_threads(1)
    assert not spawned["forked"] and not spawned["had_torch"]
    assert forked["forked"] and forked["preloaded"]  # the model libraries were there before the first task
    for state in (spawned, forked):
        assert state["torch_threads"] == int(state["omp"]) == share, state
        assert not state["cuda"]
    assert forked["hash"] == spawned["hash"]  # PYTHONHASHSEED as Dask sets it for spawned workers
    # The forkserver runs its main thread and jemalloc's (pyarrow's allocator, fork-safe): no torch or
    # OpenMP pool a fork would copy half of.
    assert [t for t in forked["parent_threads"] if t != "jemalloc_bg_thd"] == ["python"], forked["parent_threads"]
    assert forked_bytes == spawned_bytes and len(forked_bytes) > 1000


@pytest.mark.slow  # clusters of their own, or the model libraries imported
def test_a_run_cluster_forks_workers_without_torch(fresh_forkserver, monkeypatch):
    assert not any(m.split(".")[0] in ("torch", "transformers", "comet", "open_clip") for m in preload(False))
    forked, _ = on_cluster(monkeypatch, True, False)
    assert forked["forked"] and not forked["had_torch"] and not forked["preloaded"]
    assert forked["torch_threads"] == int(forked["omp"]) == worker_threads(1)


@pytest.mark.slow  # clusters of their own, or the model libraries imported
def test_the_model_imports_touch_no_cuda():
    """The forkserver's imports, in a fresh process with torch's CUDA entry points watched: none is
    called (a forked worker then starts CUDA itself, on the device its environment names)."""
    code = textwrap.dedent("""
        import importlib, torch
        called = []
        for name in ("_cuda_getDeviceCount", "_cuda_init"):
            original = getattr(torch._C, name)
            setattr(torch._C, name, lambda *a, _n=name, _o=original: (called.append(_n), _o(*a))[1])
        from xmdata.runtime.worker_start import forkserver_of, nanny_environment, preload, stop_forkserver
        for module in preload(True):
            try:
                importlib.import_module(module)
            except ImportError:
                pass
        assert "transformers.models.m2m_100.modeling_m2m_100" in __import__("sys").modules
        print(called, torch.cuda.is_initialized())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[-2] == "[] False"


@pytest.mark.slow  # clusters of their own, or the model libraries imported
def test_a_library_that_breaks_at_import_leaves_the_forkserver_up(tmp_path):
    """Python's forkserver skips only an ImportError in its preload: a library raising anything else (a
    torch/torchvision mismatch raises RuntimeError) would stop it and every worker. model_imports.py
    imports each on its own and keeps going."""
    (tmp_path / "broken_for_test.py").write_text("raise RuntimeError('operator torchvision::nms does not exist')\n")
    code = textwrap.dedent("""
        import sys
        import xmdata.models.registry as registry
        registry.BACKEND_IMPORTS = ("broken_for_test", "fasttext")
        import xmdata.runtime.model_imports as imports
        print(imports.FAILED, "fasttext" in sys.modules)
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         env={**os.environ, "PYTHONPATH": str(tmp_path)})
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == ("{'broken_for_test': 'RuntimeError: operator torchvision::nms does not exist'} "
                                  "True")


@pytest.mark.slow  # clusters of their own, or the model libraries imported
def test_a_later_cluster_sees_the_environment_as_it_is_then(fresh_forkserver, monkeypatch):
    """A forked worker has the forkserver's environment: a cluster started after a change (and after
    the last one closed) gets a forkserver of the new one, as spawned workers would."""
    def seen():
        return os.environ.get("XMDATA_TEST_RUN"), os.getppid()

    monkeypatch.setenv("XMDATA_WORKER_FORKSERVER", "on")
    answers = []
    for value in ("first", "second"):
        monkeypatch.setenv("XMDATA_TEST_RUN", value)
        cluster, client = start_local_cluster(1)
        try:
            answers += list(client.run(seen).values())
        finally:
            close_local_cluster(cluster, client)
    assert [value for value, _ in answers] == ["first", "second"]
    assert answers[0][1] != answers[1][1]  # another forkserver
