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
