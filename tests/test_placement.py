"""GPU-aware placement on a real LocalCluster, with a fake GPU resource: a GPU stage runs only on
workers advertising GPU=1, a CPU stage only off them, and with no GPU worker a GPU stage still runs."""
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime.cluster import close_local_cluster, start_local_cluster
from xmdata.runtime.executors import DaskExecutor
from xmdata.runtime.placement import add_gpu_workers
from xmdata.runtime.stage import Stage
from xmdata.tasks.ingest import ingest


def ran_where(table, params):
    """Adds the GPU count of the worker that ran the shard."""
    from distributed import get_worker

    from xmdata.tasks.rejects import no_rejects

    gpus = get_worker().state.total_resources.get("GPU", 0)
    return table.append_column("worker_gpus", pa.array([gpus] * table.num_rows, pa.float64())), no_rejects()


def gpus_used(client, stage, jobs, root) -> set:
    outcomes = list(DaskExecutor(client).run(stage, jobs, str(root)))
    assert all(error is None for _, _, error in outcomes), outcomes
    return {g for _, outcome, _ in outcomes for g in pq.read_table(
        root / stage.name / "data" / f"{outcome['record']['shard']}.parquet").column("worker_gpus").to_pylist()}


@pytest.mark.slow  # a LocalCluster of 3 worker processes: ~10 s
def test_gpu_stages_run_only_on_gpu_workers_and_still_run_without_any(tmp_path, monkeypatch):
    monkeypatch.setenv("XMDATA_GPU_WORKERS", "0")
    table = pa.table({"id": [f"r{i}" for i in range(60)], "text": ["x"] * 60})
    shards = ingest(table, "rows", 6, str(tmp_path)).data_paths
    jobs = list(enumerate(shards))
    gpu_stage = Stage("wants_gpu", "1", ran_where, gpu=True)
    cpu_stage = Stage("cpu_only", "1", ran_where)
    cluster, client = start_local_cluster(2)
    try:
        # No worker has the resource: the GPU stage runs on CPU workers, nothing waits for a GPU.
        assert gpus_used(client, gpu_stage, jobs, tmp_path / "no-gpu") == {0.0}
        add_gpu_workers(cluster, ["0"])
        client.wait_for_workers(3, timeout=60)
        resources = [w["resources"] for w in client.scheduler_info(n_workers=-1)["workers"].values()]
        assert sorted(r.get("GPU", 0) for r in resources) == [0, 0, 1]
        assert gpus_used(client, gpu_stage, jobs, tmp_path / "mixed") == {1.0}
        assert gpus_used(client, cpu_stage, jobs, tmp_path / "mixed") == {0.0}
    finally:
        close_local_cluster(cluster, client)


def test_model_stages_are_marked_as_wanting_a_gpu_and_light_ones_not(tiny_models):
    from xmdata.models.base import ModelSpec
    from xmdata.tasks.candidate_scores import candidate_lid_stage, candidate_qe_stage
    from xmdata.tasks.language_id import language_id_stage
    from xmdata.tasks.score import clip_score_stage

    assert candidate_qe_stage(tiny_models["cometkiwi"]).gpu
    assert clip_score_stage(tiny_models["open_clip"], None).gpu
    assert not language_id_stage(ModelSpec("fasttext", "lid.176")).gpu
    assert not candidate_lid_stage(ModelSpec("fasttext", "lid.176"), {}).gpu


def test_a_gpu_worker_without_a_gpu_is_refused_in_one_line(monkeypatch, capsys):
    from xmdata.cli import main

    monkeypatch.delenv("XMDATA_GPU_WORKERS", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "")
    assert main(["worker", "tcp://127.0.0.1:1", "--gpu"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "no GPU visible" in err[0]
