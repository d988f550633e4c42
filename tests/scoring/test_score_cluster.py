"""Scoring on a real cluster: an external `dask scheduler` and two `dask worker` processes on
127.0.0.1, one killed while it runs a shard; the scores must equal an in-process run's, byte for byte."""
import json
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest
from support.cli_in_process import run_xmdata
from support.shard_folders import finished_shards

pytestmark = pytest.mark.slow
BIN = os.path.dirname(sys.executable)
SHARDS = 6
WORDS = ["a red bicycle", "un vélo rouge", "ein rotes Fahrrad", "красный велосипед", "赤い自転車", "a bowl of rice",
         "deux enfants", "una mujer vende flores"]


@pytest.fixture(scope="module")
def pairs_file(tmp_path_factory):
    """1,200 pairs over the 300 sample images, with references, plus rows that must be refused."""
    from xmdata.data import sample_path

    rows = [{"id": f"p{i:04d}", "image_path": f"images/img-{i % 300:04d}.png", "language": "xx",
             "text": f"{WORDS[i % 8]} {WORDS[(i * 5) % 8]} {i}", "refs": [WORDS[(i + 1) % 8], WORDS[(i + 3) % 8]]}
            for i in range(1200)]
    rows += [{"id": "bad-missing", "image_path": "images/none.png", "text": "x", "refs": []},
             {"id": "bad-outside", "image_path": "../captions.jsonl", "text": "x", "refs": []},
             {"id": "bad-text", "image_path": "images/img-0001.png", "text": " ", "refs": None}]
    path = tmp_path_factory.mktemp("pairs") / "pairs.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return str(path), os.path.dirname(sample_path("images.csv"))


def score_command(pairs_file, tiny_models, out, *extra):
    path, root = pairs_file
    return [os.path.join(BIN, "xmdata"), "score", path, "--image-root", root, "--clip-model",
            tiny_models["open_clip"].name_or_path, "--references-column", "refs", "--embeddings",
            "--batch-size", "16", "--shards", str(SHARDS), "--out", str(out), *extra]


def scores(out):
    return pl.read_parquet(os.path.join(out, "clip_score", "data", "*.parquet")).sort("id")


def stage_files(out):
    folder = os.path.join(out, "clip_score")
    return {os.path.join(kind, name): open(os.path.join(folder, kind, name), "rb").read()
            for kind in ("data", "rejects", "_done") for name in sorted(os.listdir(os.path.join(folder, kind)))}


@pytest.fixture(scope="module")
def local_run(pairs_file, tiny_models, cli_env, tmp_path_factory):
    out = tmp_path_factory.mktemp("local")
    result = run_xmdata(score_command(pairs_file, tiny_models, out)[1:], cli_env)  # in-process
    assert result.returncode == 0, result.stderr[-3000:]
    assert "scoring: 1200 of 1203 pairs scored" in result.stdout
    return out


def test_local_cluster_scores_every_pair_and_refuses_the_bad_ones(local_run):
    summary = json.load(open(local_run / "summary.json"))
    assert summary["stages"]["clip_score"]["rejected"] == {"empty_text": 1, "missing_image": 1,
                                                           "path_outside_root": 1}
    assert summary["distributions"]["status"] == {"ok": 1200, "rejected": 3}
    table = scores(local_run)
    assert table.height == 1203 and table["ref_clip_score"].null_count() == 3
    assert table.filter(pl.col("status") == "ok")["clip_score"].is_between(0, 2.5).all()
    assert len(os.listdir(local_run / "clip_score" / "_done")) == SHARDS


def test_killed_worker_on_an_external_cluster_gives_the_same_scores(local_run, pairs_file, tiny_models,
                                                                   cluster_env, tmp_path):
    from distributed import Client

    from xmdata.runtime.prefect_api import free_port, stop_process_group

    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = os.path.join(BIN, "dask")
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"],
                              env=cluster_env, start_new_session=True, stderr=subprocess.DEVNULL)]
    out = tmp_path / "remote"
    try:
        time.sleep(1)
        procs += [subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--no-dashboard", "--host",
                                    "127.0.0.1", "--local-directory", str(tmp_path / f"w{i}")],
                                   env=cluster_env, start_new_session=True, stderr=subprocess.DEVNULL)
                  for i in range(2)]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            pids = client.run(os.getpid)
            run = subprocess.Popen(score_command(pairs_file, tiny_models, out, "--dask-address", address),
                                   env=cluster_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            done = out / "clip_score" / "_done"
            victim, deadline = None, time.monotonic() + 600
            while victim is None:  # a worker busy with a shard, once the first shard is finished
                assert run.poll() is None and time.monotonic() < deadline, "the run ended before a kill"
                busy = [w for w, keys in client.processing().items() if keys]
                if busy and finished_shards(done):
                    victim = busy[0]
                time.sleep(0.02)
            finished_at_kill = finished_shards(done)
            os.killpg(os.getpgid(pids[victim]), signal.SIGKILL)  # the worker and its nanny
            stdout, stderr = run.communicate(timeout=600)
            assert run.returncode == 0, stderr[-3000:]
            survivor = next(w for w in pids if w != victim)
            loads = client.run(lambda: __import__("xmdata.models.registry").models.registry.MODELS.load_count,
                               workers=[survivor])
        assert finished_at_kill < SHARDS and loads[survivor] == 1
        assert json.load(open(out / "run.json"))["clip_score"]["shards_run"] == SHARDS
        assert scores(out).equals(scores(local_run))
        remote, local = stage_files(out), stage_files(local_run)  # data, rejects and records
        assert sorted(remote) == sorted(local)  # the killed worker's half-written temp file included
        assert [name for name in local if remote[name] != local[name]] == []  # byte for byte
        assert open(out / "summary.json").read() == open(local_run / "summary.json").read()
    finally:
        for proc in reversed(procs):
            stop_process_group(proc)
