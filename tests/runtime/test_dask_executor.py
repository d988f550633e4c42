"""The Dask executor: what a worker imports, cheap shards sharing a task, and what happens when
workers die — one killed, one shard that keeps killing them, or all of them gone for good."""
import os
import sys
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
    with pytest.raises(ShardsFailed, match="shard-00007: the workers running it died repeatedly") as failure:
        run_stage(stage, paths, out)
    assert failure.value.failed.keys() == {7}  # not its task-mate s6: each ran alone to find out
    others = {f"s{i}": 1 for i in range(7)}
    assert {k: v for k, v in calls(tmp_path).items() if k != "s7"} == others
    os.unlink(tmp_path / "poison")  # whatever killed it is fixed: the rerun runs that shard alone
    report = run_stage(stage, paths, out)
    assert (report.shards_run, report.shards_skipped) == (1, 7)
    assert {k: v for k, v in calls(tmp_path).items() if k != "s7"} == others


def dies(table, params):
    os._exit(1)


@pytest.mark.slow
def test_a_cluster_whose_workers_all_died_fails_the_stage_naming_its_shards(monkeypatch, tmp_path):
    from xmdata.runtime import dask_executor

    async def cannot_start():
        raise RuntimeError("no worker process could start")

    monkeypatch.setattr(dask_executor, "NO_WORKERS_S", 1.0)
    with execution_session("dask", workers=1) as session:
        for nanny in session.client().cluster.workers.values():  # as the CI hang: the restart fails
            nanny.instantiate = cannot_start
        started = time.monotonic()
        with pytest.raises(ShardsFailed, match="shard-00002: no worker: the cluster started for this run "
                                               "had none, and none starting, for 1 s") as failure:
            run_stage(Stage("dies", "1", dies), write_shards(tmp_path, 3), str(tmp_path / "out"))
    assert failure.value.failed.keys() == {0, 1, 2} and time.monotonic() - started < 30
