"""The training runtime on a small real torch model: seeded order, accumulation, checkpoints, exact
resume (in-process and after a real kill -9), a NaN loss named by step and batch."""
from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from xmdata.schemas.contract import ContractError

SCRIPT = textwrap.dedent('''
    import sys, time, torch
    from xmdata.tasks.train.loop import LoopParams, TrainJob, run_training, shuffled_batches

    def job(pause=0.0, fail_at=None, nan_at=None, params_hash="h"):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(64, 6, generator=g)
        y = x @ torch.randn(6, 1, generator=g)
        torch.manual_seed(1)
        model = torch.nn.Sequential(torch.nn.Linear(6, 16), torch.nn.Dropout(0.2), torch.nn.Linear(16, 1))
        calls = []

        def loss(batch):
            calls.append(batch)
            time.sleep(pause)
            if fail_at is not None and len(calls) == fail_at:
                raise KeyboardInterrupt("killed")
            value = ((model(x[batch]) - y[batch]) ** 2).mean()
            return value * float("nan") if nan_at is not None and len(calls) == nan_at else value

        return TrainJob(model, torch.optim.AdamW(model.parameters(), lr=1e-2), loss, shuffled_batches(64, 4),
                        scheduler=lambda opt, total: torch.optim.lr_scheduler.LinearLR(opt, 1.0, 0.1, total),
                        params_hash=params_hash)

    PARAMS = LoopParams(epochs=3, batch_size=4, accumulation=2, checkpoint_every=3, seed=7)

    if __name__ == "__main__":
        j = job(pause=float(sys.argv[2]))
        run_training(j, PARAMS, sys.argv[1])
        torch.save(j.model.state_dict(), sys.argv[1] + "/final.pt")
''')


@pytest.fixture
def harness(tmp_path):
    path = tmp_path / "harness.py"
    path.write_text(SCRIPT)
    sys.path.insert(0, str(tmp_path))
    import importlib

    module = importlib.import_module("harness")
    yield module, path
    sys.path.remove(str(tmp_path))
    sys.modules.pop("harness", None)


def _weights(job) -> bytes:
    return b"".join(v.numpy().tobytes() for v in job.model.state_dict().values())


def test_a_run_interrupted_and_resumed_ends_with_the_same_weights_and_log(harness, tmp_path):
    from xmdata.tasks.train.loop import run_training

    module, _ = harness
    whole = module.job()
    result = run_training(whole, module.PARAMS, str(tmp_path / "whole"))
    assert result.steps == 3 * 8 and result.resumed_from == 0  # 16 micro-batches an epoch, 2 per step
    with pytest.raises(KeyboardInterrupt, match="^killed$"):
        run_training(module.job(fail_at=21), module.PARAMS, str(tmp_path / "cut"))  # mid step 11
    resumed = module.job()
    again = run_training(resumed, module.PARAMS, str(tmp_path / "cut"))
    assert again.resumed_from == 9  # the checkpoint of step 9; steps 10 and 11 are done again
    assert _weights(resumed) == _weights(whole)
    assert again.losses == result.losses
    assert (tmp_path / "cut/artifacts/losses.jsonl").read_text() == (tmp_path / "whole/artifacts/losses.jsonl").read_text()
    curve = (tmp_path / "cut/artifacts/loss_curve.png").read_bytes()
    assert curve[:8] == b"\x89PNG\r\n\x1a\n" and b"Software" not in curve  # no matplotlib version in it
    assert curve == (tmp_path / "whole/artifacts/loss_curve.png").read_bytes()  # the same losses, the same PNG
    for name in ("checkpoint.pt", "artifacts/losses.parquet", "artifacts/loss_curve.png"):
        assert oct(os.stat(tmp_path / "cut" / name).st_mode & 0o777) == "0o600", name


def test_the_seed_decides_the_data_order_and_a_finished_run_is_not_redone(harness, tmp_path):
    from xmdata.tasks.train.loop import plan, run_training

    module, _ = harness
    first, second = plan(module.job(), module.PARAMS), plan(module.job(), module.PARAMS)
    other = plan(module.job(), module.PARAMS.model_copy(update={"seed": 8}))
    assert first == second and first != other
    assert first[0][1] != first[8][1]  # each epoch has its own order
    assert sorted(i for _, group in first[:8] for _, batch in group for i in batch) == list(range(64))
    run_training(module.job(), module.PARAMS, str(tmp_path / "run"))
    done = module.job(fail_at=1)  # would raise if it computed a single loss
    assert run_training(done, module.PARAMS, str(tmp_path / "run")).resumed_from == 24


def test_accumulated_micro_batches_step_like_one_batch(tmp_path):
    import torch

    from xmdata.tasks.train.loop import LoopParams, TrainJob, run_training

    x, y = torch.arange(16.0).reshape(8, 2), torch.arange(8.0).reshape(8, 1)

    def job():
        torch.manual_seed(0)
        model = torch.nn.Linear(2, 1)
        return model, torch.optim.SGD(model.parameters(), lr=0.01)

    models = []
    for batch_size, accumulation in ((8, 1), (2, 4)):
        model, optimizer = job()
        loss = lambda b, m=model: ((m(x[b]) - y[b]) ** 2).mean()
        batches = lambda epoch, rng, n=batch_size: [list(range(i, i + n)) for i in range(0, 8, n)]
        run_training(TrainJob(model, optimizer, loss, batches), LoopParams(batch_size=batch_size, accumulation=accumulation),
                     str(tmp_path / f"{batch_size}"))
        models.append(model)
    assert torch.allclose(models[0].weight, models[1].weight, atol=1e-6)
    assert not torch.equal(models[0].weight, job()[0].weight)  # it did step


def test_a_nan_loss_stops_the_run_naming_the_step_and_batch(harness, tmp_path):
    from xmdata.tasks.train.loop import NonFiniteLoss, run_training

    module, _ = harness
    with pytest.raises(NonFiniteLoss, match=r"loss is nan at optimizer step 4 of 24, batch 7 of epoch 0") as info:
        run_training(module.job(nan_at=8), module.PARAMS, str(tmp_path / "run"))
    assert "\n" not in str(info.value) and isinstance(info.value, ContractError)  # the CLI's one line, exit 2
    assert len((tmp_path / "run/artifacts/losses.jsonl").read_text().splitlines()) == 3


def test_a_checkpoint_of_other_params_is_refused(harness, tmp_path):
    from xmdata.tasks.train.loop import run_training

    module, _ = harness
    run_training(module.job(), module.PARAMS.model_copy(update={"max_steps": 3}), str(tmp_path / "run"))
    with pytest.raises(ContractError, match="checkpoint of a run with other params"):
        run_training(module.job(params_hash="other"), module.PARAMS.model_copy(update={"max_steps": 3}),
                     str(tmp_path / "run"))


@pytest.mark.slow  # two training processes, one killed mid-run
def test_a_run_killed_with_sigkill_resumes_to_byte_identical_weights(harness, tmp_path):
    _, script = harness
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(tmp_path), os.environ.get("PYTHONPATH")]))}

    def start(folder, pause):
        return subprocess.Popen([sys.executable, str(script), str(folder), str(pause)], env=env)

    assert start(tmp_path / "whole", 0).wait(timeout=300) == 0
    killed = start(tmp_path / "cut", 0.05)  # 48 micro-batches of >= 50 ms: time to be killed mid-run
    checkpoint = tmp_path / "cut" / "checkpoint.pt"
    deadline = time.monotonic() + 120
    while not checkpoint.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    time.sleep(0.4)  # into the steps after the first checkpoint
    os.kill(killed.pid, signal.SIGKILL)
    assert killed.wait(timeout=30) == -signal.SIGKILL
    assert not (tmp_path / "cut" / "final.pt").exists()  # it really stopped mid-run
    assert start(tmp_path / "cut", 0).wait(timeout=300) == 0
    weights = [_tensor_bytes(tmp_path / run / "final.pt") for run in ("whole", "cut")]
    assert weights[0] == weights[1]
    assert (tmp_path / "cut/artifacts/losses.jsonl").read_text() == (tmp_path / "whole/artifacts/losses.jsonl").read_text()


def _tensor_bytes(path) -> str:
    """sha256 of every tensor's bytes in name order (torch.save's zip records no time, but compare values)."""
    import torch

    state = torch.load(path)
    return hashlib.sha256(b"".join(k.encode() + state[k].numpy().tobytes() for k in sorted(state))).hexdigest()
