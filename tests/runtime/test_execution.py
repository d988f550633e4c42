"""Execution: where a stage runs, per-shard failures in this process, and the service's cluster
waited for only when needed (worker loss on a cluster: test_dask_executor.py)."""
import json
import os
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime.execution import ShardsFailed, run_stage
from xmdata.runtime.session import ExecutionSession, execution_session
from xmdata.runtime.stage import Stage


def write_shards(root, n, rows=3):
    paths = []
    for i in range(n):
        path = os.path.join(root, "input", f"shard-{i:05d}.parquet")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        pq.write_table(pa.table({"id": [f"s{i}-{j}" for j in range(rows)], "text": ["bonjour"] * rows}), path)
        paths.append(path)
    return paths


class Light:
    inline_rows = 100


@pytest.mark.parametrize("executor, address, service, rows, shards, where", [
    ("auto", None, "tcp://warm", 50, 4, "in-process"),     # under the stage's inline_rows
    ("auto", None, "tcp://warm", 5_000, 4, "cluster"),     # a warm cluster is at hand
    ("auto", None, None, 1_500, 4, "in-process"),           # small, and no cluster to start for it
    ("auto", None, None, 50_000, 4, "cluster"),             # big enough to start one
    ("auto", None, "tcp://warm", 50_000, 1, "in-process"),  # one shard: nothing to spread
    ("auto", "tcp://given", None, 10, 4, "cluster"),        # a scheduler the user named: everything there
    ("inprocess", "tcp://given", None, 50_000, 4, "in-process"),
    ("dask", None, None, 10, 4, "cluster"),
])
def test_each_stage_runs_where_its_size_says(executor, address, service, rows, shards, where):
    session = ExecutionSession(executor, address, service_address=service)
    session._client = object()  # no cluster is started or reached to decide
    assert session.executor_for(Light(), rows, shards).where == where


def test_the_services_cluster_is_waited_for_only_by_a_stage_that_goes_there():
    asked = []

    def cluster_address():  # as service.cluster_address: waits while the service's cluster starts
        asked.append(1)
        return "tcp://warm"

    session = ExecutionSession("auto", None, service_address=cluster_address)
    assert session.executor_for(Light(), 50, 4).where == "in-process" and asked == []
    assert session.has_warm_cluster and session.warm_address.address == "tcp://warm" == session.warm_address.address
    assert asked == [1]


def test_waiting_for_the_services_cluster_ends_in_a_clear_error_when_the_service_is_gone(tmp_path, monkeypatch):
    from xmdata.service import service

    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    os.makedirs(service.state_dir(), exist_ok=True)
    service.write_state({"pid": dead.pid, "dask_address": None})  # Prefect was up; then it died
    with pytest.raises(service.ServiceError, match="Dask cluster did not start"):
        service.cluster_address(timeout=30)
    service.write_state({"pid": os.getpid(), "dask_address": "tcp://127.0.0.1:1"})  # another service now
    with pytest.raises(service.ServiceError, match="restarted while this command ran"):
        service.cluster_address(dead.pid)


def test_in_process_failures_are_recorded_per_shard_and_a_rerun_finishes_them(tmp_path):
    from xmdata.tasks.build.rejects import no_rejects

    def flaky(table, params):
        if table.column("id")[0].as_py().startswith("s1-") and not os.path.exists(tmp_path / "fixed"):
            raise RuntimeError("disk full")
        return table, no_rejects()

    stage, paths, out = Stage("flaky", "1", flaky), write_shards(tmp_path, 3), str(tmp_path / "out")
    with execution_session("inprocess"):
        with pytest.raises(ShardsFailed, match=r"shard-00001: RuntimeError: disk full") as failure:
            run_stage(stage, paths, out)
        assert failure.value.failed.keys() == {1}
        assert sorted(os.listdir(tmp_path / "out" / "flaky" / "_done")) == ["shard-00000.json", "shard-00002.json"]
        (tmp_path / "fixed").write_text("")
        report = run_stage(stage, paths, out)
    assert (report.shards_run, report.shards_skipped) == (1, 2)


def test_an_in_process_shard_may_use_every_core_beside_its_models_share(tmp_path, monkeypatch):
    """In-process a shard runs alone on the machine: the work beside its model (the scoring stage's
    decoders) gets every core, while torch keeps a worker's share of threads (OMP_NUM_THREADS)."""
    from xmdata.runtime.cluster import shard_cores
    from xmdata.tasks.build.rejects import no_rejects

    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    seen = []

    def record_cores(table, params):
        seen.append(shard_cores())
        return table, no_rejects()

    with execution_session("inprocess"):
        run_stage(Stage("cores", "1", record_cores), write_shards(tmp_path, 2), str(tmp_path / "out"))
    assert seen == [len(os.sched_getaffinity(0))] * 2
    assert shard_cores() == 1  # outside a shard (a Dask worker's view): its share


def test_a_temp_file_left_by_a_writer_killed_mid_run_is_gone_when_the_stage_ends(tmp_path):
    from xmdata.tasks.build.rejects import no_rejects

    def killed_mid_write(table, params):  # what a worker killed inside write_parquet_atomic leaves
        stray = tmp_path / "out" / "stray" / "data" / ".tmp-killed.part"
        stray.parent.mkdir(parents=True, exist_ok=True)
        stray.write_bytes(b"PAR1 half")
        return table, no_rejects()

    with execution_session("inprocess"):
        report = run_stage(Stage("stray", "1", killed_mid_write), write_shards(tmp_path, 2), str(tmp_path / "out"))
    assert report.shards_run == 2
    assert sorted(os.listdir(tmp_path / "out" / "stray" / "data")) == ["shard-00000.parquet", "shard-00001.parquet"]


def test_shard_failures_exit_1_naming_the_shards(monkeypatch, capsys):
    from dataclasses import replace

    from xmdata import cli, commands

    def failing(args):
        raise ShardsFailed("translate", {3: "KilledWorker", 7: "MemoryError: "})

    monkeypatch.setattr(commands, "COMMANDS", tuple(replace(c, run=failing) if c.name == "validate" else c
                                                    for c in commands.COMMANDS))
    assert cli.main(["validate", "x.csv"]) == 1
    err = capsys.readouterr().err
    assert "shard-00003: KilledWorker" in err and "shard-00007" in err and "run the same command again" in err


def test_a_reason_many_shards_share_is_said_once():
    failed = {i: "no worker on the cluster tls://127.0.0.1:1" for i in range(7)} | {9: "MemoryError: "}
    message = str(ShardsFailed("translate", failed))
    assert ("8 shard(s) failed — shard-00000, shard-00001, shard-00002, shard-00003, shard-00004 and 2 more: "
            "no worker on the cluster tls://127.0.0.1:1; shard-00009: MemoryError: .") in message


def test_the_least_recently_used_model_is_released_past_the_memory_limit(tiny_models, monkeypatch):
    from xmdata.models import registry
    from xmdata.models.model_cache import ModelCache, model_bytes

    monkeypatch.setattr(registry, "MODELS", ModelCache())
    sizes = sorted(model_bytes(registry.get_model("translator", tiny_models[b])) for b in ("m2m100", "madlad"))
    monkeypatch.setenv(registry.MEMORY_ENV, str((sizes[1] + sizes[0] / 2) / 1e9))  # room for one of the two
    registry.get_model("translator", tiny_models["m2m100"])  # used again: now the most recent
    registry.get_model("language_identifier", tiny_models["fasttext"])  # a load: the limit is applied
    held = [m["model"] for m in registry.loaded_models()]
    assert sizes[0] > 0 and held == [tiny_models["m2m100"].name_or_path, tiny_models["fasttext"].name_or_path]
    assert registry.MODELS.released == [("translator", tiny_models["madlad"].name_or_path)]


@pytest.mark.slow
def test_the_ui_sees_one_task_run_per_stage_with_progress_and_a_shard_table(prefect_server, tmp_path):
    import asyncio

    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import (ArtifactFilter, ArtifactFilterFlowRunId, FlowRunFilter,
                                                FlowRunFilterId)

    from xmdata.data import sample_path
    from xmdata.flows.language_id import identify_language_flow

    with execution_session("inprocess"):
        state = identify_language_flow(sample_path("captions.jsonl"), str(tmp_path / "out"), shards=16,
                                       return_state=True)
    flow_run_id = state.state_details.flow_run_id

    async def read():
        async with get_client() as client:
            runs = await client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
            # By flow run: the session's server holds every test's artifacts, more than one page of them.
            artifacts = await client.read_artifacts(artifact_filter=ArtifactFilter(
                flow_run_id=ArtifactFilterFlowRunId(any_=[flow_run_id])))
            return runs, artifacts

    task_runs, artifacts = asyncio.run(read())
    assert [r.name for r in task_runs] == ["language_id"]  # one per stage, none per shard
    mine = {a.key: a for a in artifacts if a.flow_run_id == flow_run_id}
    assert mine["language-id-progress"].data == 100.0
    table = json.loads(mine["language-id-shards"].data)
    assert len(table) == 16 and {row["status"] for row in table} == {"ran"}


def test_a_bad_executor_in_the_environment_is_refused_before_anything_starts(monkeypatch, tmp_path, capsys):
    from xmdata.cli import main
    from xmdata.data import sample_path

    monkeypatch.setenv("XMDATA_EXECUTOR", "fast")
    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    assert main(["identify-language", sample_path("captions.jsonl"), "--out", str(tmp_path / "out")]) == 2
    assert "XMDATA_EXECUTOR='fast': choose from auto, inprocess, dask" in capsys.readouterr().err
    assert not (tmp_path / "cache").exists()  # no service was started for it


def test_a_bad_xmdata_service_is_one_line_and_starts_nothing(tmp_path):
    """The entry point (service/client.py) reads XMDATA_SERVICE first: a bad value is the command's
    one-line refusal, exit 2, before the demo's early service start."""
    xmdata = os.path.join(os.path.dirname(sys.executable), "xmdata")
    env = {**os.environ, "XMDATA_SERVICE": "maybe", "XMDATA_CACHE": str(tmp_path / "cache"),
           "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    done = subprocess.run([xmdata, "demo", "--out", str(tmp_path / "out")], env=env, capture_output=True, text=True)
    assert (done.returncode, done.stderr.strip()) == (2, "xmdata: error: XMDATA_SERVICE='maybe': expected on or off")
    assert not (tmp_path / "cache").exists() and not (tmp_path / "out").exists()


def test_the_demo_starts_no_service_early_for_what_the_command_refuses(monkeypatch, tmp_path):
    """run_setup.start_service_early checks what run_environment refuses before any start."""
    import threading

    from xmdata.service.run_setup import start_service_early

    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("PREFECT_API_URL", raising=False)
    before = threading.active_count()
    monkeypatch.setenv("XMDATA_EXECUTOR", "fast")
    start_service_early()
    monkeypatch.delenv("XMDATA_EXECUTOR")
    start_service_early(tls=("ca.pem", None, None))  # TLS flags without a tls:// address
    assert threading.active_count() == before and not (tmp_path / "cache").exists()


def test_ctrl_c_ends_a_command_in_one_line_and_130(tmp_path):
    """An interrupted command (here: its body raises KeyboardInterrupt, as SIGINT does) says so in one
    line and exits 130, without Python's traceback; the command server's client gets the same code."""
    from xmdata.data import sample_path

    code = ("import dataclasses, sys; from xmdata import commands; from xmdata.cli import main\n"
            "def interrupted(args): raise KeyboardInterrupt\n"
            "commands.COMMANDS = tuple(dataclasses.replace(c, run=interrupted) if c.name == 'identify-language' "
            "else c for c in commands.COMMANDS)\n"
            "sys.exit(main(['identify-language', sys.argv[1], '--out', sys.argv[2]]))")
    env = {**os.environ, "XMDATA_CACHE": str(tmp_path / "cache"), "XMDATA_SERVICE": "off"}
    done = subprocess.run([sys.executable, "-c", code, sample_path("captions.jsonl"), str(tmp_path / "out")],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 130, done.stderr[-2000:]
    assert done.stderr.strip() == "xmdata: interrupted (finished shards are kept: the same command resumes from them)"
