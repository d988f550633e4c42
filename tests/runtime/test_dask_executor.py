"""The Dask executor: what a worker imports, cheap shards sharing a task, and what happens when
workers die — one killed, one shard that keeps killing them, or all of them gone for good."""
import contextvars
import os
import sys
import threading
import time

import pytest
from test_execution import write_shards

from xmdata.runtime.execution import ShardsFailed, run_stage
from xmdata.runtime.process import run_shard_job
from xmdata.runtime.session import execution_session
from xmdata.runtime.stage import Stage

HEAVY = ("torch", "transformers", "comet", "open_clip", "lightning")


def counted(table, params):
    """Records each call per shard; kills its worker process on the victim shard while `poison` exists."""
    from xmdata.tasks.build.rejects import no_rejects

    shard = table.column("id")[0].as_py().split("-")[0]
    with open(os.path.join(params["marks"], shard), "a") as f:
        f.write("call\n")
    if shard == params["victim"] and os.path.exists(params["poison"]):
        if params["once"]:
            os.unlink(params["poison"])
        os._exit(1)
    return table, no_rejects()


def counting_stage(tmp_path, victim="s2", once=True):
    marks = tmp_path / "marks"
    marks.mkdir(exist_ok=True)
    (tmp_path / "poison").write_text("")
    return Stage("counted", "1", counted, {"marks": str(marks), "victim": victim,
                                          "poison": str(tmp_path / "poison"), "once": once})


def calls(tmp_path):
    return {p.name: len(p.read_text().splitlines()) for p in (tmp_path / "marks").iterdir()}


def test_a_finished_shard_is_returned_not_recomputed(tmp_path):
    stage = counting_stage(tmp_path, victim="none")
    path = write_shards(tmp_path, 1)[0]
    first = run_shard_job(stage, path, str(tmp_path / "out"), 0)
    again = run_shard_job(stage, path, str(tmp_path / "out"), 0)  # as Dask does after a worker loss
    assert first["recomputed"] and not again["recomputed"] and again["record"] == first["record"]
    assert calls(tmp_path) == {"s0": 1}


@pytest.fixture(scope="module")
def local_cluster():
    """Two workers; a task is KilledWorker after two deaths, not Dask's four: the tests below test
    what the executor does with KilledWorker, and each death costs a worker restart (~2 s)."""
    import dask
    import distributed  # noqa: F401 — its config defaults first: leaving the `set` below restores them

    with execution_session("dask", workers=2) as session:
        with dask.config.set({"distributed.scheduler.allowed-failures": 1}):  # read as the scheduler starts
            session.client()
        yield session


@pytest.mark.slow
def test_workers_import_only_their_stage_and_time_model_loads_apart(local_cluster, tmp_path):
    from xmdata.models.base import ModelSpec
    from xmdata.tasks.translation.language_id import language_id_stage

    report = run_stage(language_id_stage(ModelSpec("fasttext", "lid.176")), write_shards(tmp_path, 4),
                       str(tmp_path / "out"))
    assert report.rows_out == 12 and report.timing["where"] == "cluster"
    assert report.timing["model_load_s"] > 0 and report.timing["work_s"] > 0
    imported = local_cluster.client().run(lambda: sorted(m for m in HEAVY if m in sys.modules))
    assert imported and all(mods == [] for mods in imported.values()), imported


@pytest.fixture
def shards_in_pairs(monkeypatch):
    """After the first four shards (one a task), the rest go two to a Dask task: shard 7 shares one
    with shard 6, which runs before it."""
    from xmdata.runtime import dask_executor

    monkeypatch.setattr(dask_executor, "TASK_S", 1e6)
    monkeypatch.setattr(dask_executor, "TASKS_PER_THREAD", 1)


@pytest.mark.parametrize("seconds, remaining, threads, per_task", [
    ([], 1000, 2, 1),            # nothing measured yet: one a task
    ([2.0, 3.0], 1000, 2, 1),    # a model stage's shards: one a task
    ([0.001] * 5, 1000, 2, 125),  # cheap shards: as many as keep 4 tasks a thread
    ([0.01] * 5, 10_000, 2, 50),  # cheap shards: about half a second of work a task
    ([0.001], 5, 2, 1)])
def test_cheap_shards_share_a_dask_task_and_costly_ones_do_not(seconds, remaining, threads, per_task):
    from xmdata.runtime.dask_executor import shards_per_task

    assert shards_per_task(seconds, remaining, threads) == per_task


@pytest.mark.slow
def test_a_killed_worker_has_its_shard_rerun_and_no_other_shard_recomputed(local_cluster, shards_in_pairs, tmp_path):
    report = run_stage(counting_stage(tmp_path, victim="s7", once=True), write_shards(tmp_path, 8),
                       str(tmp_path / "out"))
    assert report.shards_run == 8 and report.rows_out == 24
    # s6 finished in the task its worker died in; the task's rerun found its record, not its work.
    assert calls(tmp_path) == {**{f"s{i}": 1 for i in range(7)}, "s7": 2}


@pytest.mark.slow
def test_a_shard_that_keeps_killing_workers_fails_while_the_others_finish(local_cluster, shards_in_pairs, tmp_path):
    stage, paths, out = counting_stage(tmp_path, victim="s7", once=False), write_shards(tmp_path, 8), str(tmp_path / "out")
    with pytest.raises(ShardsFailed, match="shard-00007: its workers died running it, again after Dask's retries") as failure:
        run_stage(stage, paths, out)
    assert failure.value.failed.keys() == {7}  # not its task-mate s6: each ran alone to find out
    others = {f"s{i}": 1 for i in range(7)}
    assert {k: v for k, v in calls(tmp_path).items() if k != "s7"} == others
    os.unlink(tmp_path / "poison")  # whatever killed it is fixed: the rerun runs that shard alone
    report = run_stage(stage, paths, out)
    assert (report.shards_run, report.shards_skipped) == (1, 7)
    assert {k: v for k, v in calls(tmp_path).items() if k != "s7"} == others


REFUSING_PRELOAD = """import os
if os.path.exists({marker!r}):
    raise RuntimeError("no worker process can start on this machine now")
"""


def breaks_worker_starts(table, params):
    """From now on every worker process fails as it starts (the preload above), then this one dies:
    its nanny's restart fails for real ("Failed to restart worker"), and no worker is left."""
    open(params["broken"], "w").close()
    os._exit(1)


def finished_within(seconds: float, fn) -> dict:
    """`fn()` in a thread (this context: the session), its result or exception; fails the test if it
    is still running after `seconds` — a hang, not a slow run."""
    ended: dict = {}

    def call():
        try:
            ended["result"] = fn()
        except Exception as exc:  # noqa: BLE001 — the test looks at it
            ended["error"] = exc

    thread = threading.Thread(target=contextvars.copy_context().run, args=(call,), daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still waiting after {seconds} s"
    return ended


@pytest.mark.slow
def test_a_cluster_left_without_a_worker_fails_the_stage_in_one_line_naming_it(monkeypatch, tmp_path):
    import dask
    import distributed  # noqa: F401 — its config defaults first: leaving the `set` below restores them

    preload = tmp_path / "refusing_preload.py"
    preload.write_text(REFUSING_PRELOAD.format(marker=str(tmp_path / "broken")))
    stage = Stage("breaks", "1", breaks_worker_starts, {"broken": str(tmp_path / "broken")})
    monkeypatch.setenv("XMDATA_NO_WORKER_SECONDS", "2")
    with dask.config.set({"distributed.worker.preload": [str(preload)]}):  # read by each nanny
        with execution_session("dask", workers=1) as session:
            address = session.client().scheduler.address
            ended = finished_within(60, lambda: run_stage(stage, write_shards(tmp_path, 3), str(tmp_path / "out")))
    failure = ended.get("error")
    assert isinstance(failure, ShardsFailed) and failure.failed.keys() == {0, 1, 2}, ended
    message = str(failure)  # what the CLI prints after "xmdata: error: ", exit 1
    assert "\n" not in message and message.count("no worker") == 1, message
    assert (f"shard-00000, shard-00001, shard-00002: no worker on the cluster {address} for 2 s "
            f"(XMDATA_NO_WORKER_SECONDS)") in message and address.startswith("tls://")
    assert "(worker log: this command's stderr)" in message


@pytest.mark.slow
def test_a_cluster_with_no_worker_for_a_while_is_waited_for(local_cluster, monkeypatch, tmp_path):
    """Scaled to zero, as an adaptive cluster is, then back: the stage waits and finishes."""
    from xmdata.runtime import dask_executor

    client = local_cluster.client()
    client.cluster.scale(0)
    while client.scheduler_info(n_workers=0)["n_workers"]:
        time.sleep(0.1)
    seen, asked = [], dask_executor._Tasks.workers_for_stage

    def workers_come_after_two_asks(tasks):
        seen.append(asked(tasks))
        if len(seen) == 2:
            client.cluster.scale(2)
        return seen[-1]

    monkeypatch.setattr(dask_executor._Tasks, "workers_for_stage", workers_come_after_two_asks)
    monkeypatch.setenv("XMDATA_NO_WORKER_SECONDS", "60")
    try:
        ended = finished_within(120, lambda: run_stage(counting_stage(tmp_path, victim="none"),
                                                        write_shards(tmp_path, 3), str(tmp_path / "out")))
    finally:
        client.cluster.scale(2)
        client.wait_for_workers(2, timeout=60)
    assert seen[:2] == [0, 0] and ended["result"].shards_run == 3, ended


def test_the_no_worker_failure_names_where_the_workers_log():
    from xmdata.runtime.session import ExecutionSession
    from xmdata.service.service import paths

    # the caller that hands the session the service's cluster hands it the service's log (service/run_setup.py)
    warm = ExecutionSession("dask", service_address="tls://127.0.0.1:1", service_log=paths()["log"])
    assert warm.worker_log() == paths()["log"]
    assert ExecutionSession("dask", address="tls://127.0.0.1:1").worker_log().startswith("the workers' own output")
