"""`xmdata train distill` as a user runs it: through its Prefect flow, killed with SIGKILL mid-run and
started again, ending with the bytes of a run never killed; the demo release refused."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time

import pytest

from support.cli_in_process import run_xmdata
from support.qa_release import qa_release, tiny_decoder  # noqa: F401  (fixtures)

ARGS = ["--batch-size", "8", "--accumulation", "2", "--epochs", "3", "--checkpoint-every", "1", "--max-steps", "28",
        "--learning-rate", "1e-3", "--quiet"]


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.slow  # the flow through the test run's service, three training processes, one killed
def test_a_distillation_killed_with_sigkill_resumes_to_byte_identical_weights(qa_release, tiny_decoder, tmp_path,
                                                                             cli_env):
    def argv(out):
        return ["train", "distill", str(qa_release), "--model", str(tiny_decoder), "--out", str(out), *ARGS]

    whole = run_xmdata(argv(tmp_path / "whole"), cli_env)
    assert whole.returncode == 0, whole.stderr
    assert "28 optimizer steps (0 resumed)" in whole.stdout
    killed = subprocess.Popen([sys.executable, "-m", "xmdata.cli", *argv(tmp_path / "cut")], env=cli_env,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    checkpoint, deadline = tmp_path / "cut" / "checkpoint.pt", time.monotonic() + 300
    while not checkpoint.exists() and time.monotonic() < deadline and killed.poll() is None:
        time.sleep(0.02)
    time.sleep(1.0)  # a few steps past the first checkpoint
    os.kill(killed.pid, signal.SIGKILL)
    assert killed.wait(timeout=30) == -signal.SIGKILL
    assert checkpoint.exists() and not (tmp_path / "cut" / "model").exists()  # stopped mid-training
    again = run_xmdata(argv(tmp_path / "cut"), cli_env)
    assert again.returncode == 0, again.stderr
    assert "(0 resumed)" not in again.stdout
    assert _sha(tmp_path / "cut/model/model.safetensors") == _sha(tmp_path / "whole/model/model.safetensors")
    assert (tmp_path / "cut/artifacts/losses.jsonl").read_text() == (tmp_path / "whole/artifacts/losses.jsonl").read_text()


@pytest.mark.slow  # the demo release is built once per run
def test_the_demo_release_has_no_qa_pair_to_train_on(demo_release, tiny_decoder, tmp_path, cli_env):
    done = run_xmdata(["train", "distill", str(demo_release), "--model", str(tiny_decoder),
                       "--out", str(tmp_path / "out")], cli_env)
    assert done.returncode == 2 and "no qa_parallel pair left to train on" in done.stderr
    assert done.stderr.count("\n") == 1 and not (tmp_path / "out").exists()


@pytest.mark.slow  # the flow through the test run's service
def test_a_diverging_run_stops_in_one_line_naming_the_step_and_batch(qa_release, tiny_decoder, tmp_path, cli_env):
    done = run_xmdata(["train", "distill", str(qa_release), "--model", str(tiny_decoder), "--out", str(tmp_path / "out"),
                       "--learning-rate", "1e30", "--batch-size", "8", "--accumulation", "1", "--quiet"], cli_env)
    lines = [line for line in done.stderr.splitlines() if not line.startswith("xmdata: started")
             and "restarting it" not in line]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr[-3000:]
    assert len(lines) == 1 and lines[0].startswith("xmdata: error: training: loss is nan at optimizer step 2")
    assert "batch 1 of epoch 0 (pairs inst" in lines[0]


@pytest.mark.slow  # the flow through the test run's service, three short runs
def test_a_distillation_to_a_store_url_ends_with_a_local_runs_bytes_and_resumes_from_the_store(
        qa_release, tiny_decoder, tmp_path, s3_env, s3):
    """Trained in a local folder keyed by the URL, every file moved up when the run ends
    (tasks/train/run_folder.py); a second run finds the finished checkpoint on the store."""
    six = [*ARGS[:ARGS.index("--max-steps") + 1], "6", *ARGS[ARGS.index("--max-steps") + 2:]]

    def argv(out):
        return ["train", "distill", str(qa_release), "--model", str(tiny_decoder), "--out", str(out), *six]

    local = run_xmdata(argv(tmp_path / "local"), s3_env)
    assert local.returncode == 0, local.stderr
    stored = run_xmdata(argv("s3://xmdata/distill"), s3_env)
    assert stored.returncode == 0, stored.stderr
    assert "6 optimizer steps (0 resumed)" in stored.stdout and "model -> s3://xmdata/distill/model" in stored.stdout
    fs = s3.filesystem()
    for name in ("model/model.safetensors", "artifacts/losses.jsonl", "artifacts/losses.parquet",
                 "artifacts/loss_curve.png", "eval/after.parquet"):
        assert fs.cat_file(f"xmdata/distill/{name}") == (tmp_path / "local" / name).read_bytes(), name
    assert fs.exists("xmdata/distill/model/model_card.json") and fs.exists("xmdata/distill/summary.md")
    here = os.path.join(s3_env.get("XMDATA_CACHE", os.environ["XMDATA_CACHE"]), "train-runs",
                        hashlib.sha256(b"s3://xmdata/distill").hexdigest()[:16])
    assert not os.path.exists(here)  # every file moved up, nothing left on this machine
    again = run_xmdata(argv("s3://xmdata/distill"), s3_env)
    assert again.returncode == 0, again.stderr
    assert "6 optimizer steps (6 resumed)" in again.stdout
