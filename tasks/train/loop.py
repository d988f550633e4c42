"""The training runtime every recipe runs on (`xmdata train distill`, `xmdata train clipscore`): a data
order drawn from the seed, gradient accumulation, a checkpoint replaced atomically every N optimizer
steps, and a resume that ends a run killed with kill -9 with the same bytes as one never killed.

API (a recipe builds a TrainJob, then calls run_training):

    from xmdata.tasks.train.loop import LoopParams, TrainJob, run_training, shuffled_batches

    class MyParams(Params):                        # a recipe's params nest the loop's, defaults its own
        loop: LoopParams = LoopParams(batch_size=8, accumulation=16)

    job = TrainJob(
        model=module,                 # what is trained; its state_dict is checkpointed and restored
        optimizer=torch.optim.AdamW(module.parameters(), lr=...),
        loss=lambda batch: tensor,    # one micro-batch's loss: a scalar tensor (mean over its rows)
        batches=shuffled_batches(n_rows, params.loop.batch_size),
                                      # (epoch, rng) -> that epoch's micro-batches, in order; rng is a numpy
                                      # Generator seeded from (seed, epoch), so the order is the seed's alone.
                                      # Any list works (a recipe alternating two tasks returns its own).
        scheduler=None,               # or (optimizer, total_steps) -> an LR scheduler, stepped per optimizer step
        params_hash=hash_params(params.model_dump()),  # a checkpoint of other params is refused, not resumed
        describe=lambda batch: "...", # optional: names a batch's rows in the NaN error
    )
    result = run_training(job, params.loop, run_dir)   # -> TrainResult
    # then the recipe saves job.model under run_dir/model and calls write_model_card (card.py).

Optimizer steps consume `accumulation` micro-batches each (the last group of an epoch may be shorter;
its losses are averaged over the micro-batches it has). Files under run_dir (private, 0700/0600; each
replaced whole through runtime/atomic.py, but for the log's per-step lines, appended):
  checkpoint.pt            model, optimizer, scheduler, RNG states (torch, numpy, python), data position
  artifacts/losses.jsonl   one line per optimizer step: step, epoch, loss, lr (rewritten to the
                           checkpoint's step on resume, so a resumed log equals an uninterrupted one)
  artifacts/losses.parquet, artifacts/loss_curve.png   at the end
A loss that is NaN or infinite stops the run with NonFiniteLoss (a ContractError: one line, exit 2)
naming the optimizer step and the batch; the last checkpoint stays as it was.
"""
from __future__ import annotations

import io
import json
import os
import random
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from xmdata.runtime.owner_only import private_folder, write_private
from xmdata.schemas.contract import ContractError
from xmdata.tasks.train.loop_params import LoopParams  # noqa: F401  (the loop's params, declared apart: --help imports them)

CHECKPOINT = "checkpoint.pt"
ARTIFACTS = "artifacts"
LOSSES = "losses.jsonl"


class NonFiniteLoss(ContractError):
    """A micro-batch's loss is NaN or infinite: the run stops there (CLI exit 2)."""


@dataclass
class TrainJob:
    model: Any
    optimizer: Any
    loss: Callable[[Any], Any]
    batches: Callable[[int, np.random.Generator], Sequence[Any]]
    scheduler: Callable[[Any, int], Any] | None = None
    params_hash: str = ""
    describe: Callable[[Any], str] | None = None


@dataclass(frozen=True)
class TrainResult:
    steps: int                     # optimizer steps done in all
    resumed_from: int              # the checkpoint's step this process started from (0: from scratch)
    losses: list[dict] = field(default_factory=list)  # the whole run's log, resumed part included
    artifacts: dict[str, str] = field(default_factory=dict)


def shuffled_batches(n_rows: int, batch_size: int) -> Callable[[int, np.random.Generator], list[list[int]]]:
    """Row indices, shuffled per epoch by the epoch's generator, cut into micro-batches of batch_size."""
    def batches(epoch: int, rng: np.random.Generator) -> list[list[int]]:
        order = rng.permutation(n_rows).tolist()
        return [order[i:i + batch_size] for i in range(0, n_rows, batch_size)]
    return batches


def epoch_rng(seed: int, epoch: int) -> np.random.Generator:
    import numpy as np  # here, not at import: `xmdata --help` imports the params

    return np.random.Generator(np.random.PCG64([seed, epoch]))


def plan(job: TrainJob, params: LoopParams) -> list[tuple[int, list[tuple[int, Any]]]]:
    """Every optimizer step's (epoch, [(batch index, micro-batch), …]), in order, max_steps applied."""
    steps = []
    for epoch in range(params.epochs):
        batches = list(enumerate(job.batches(epoch, epoch_rng(params.seed, epoch))))
        steps += [(epoch, batches[i:i + params.accumulation]) for i in range(0, len(batches), params.accumulation)]
    return steps[:params.max_steps] if params.max_steps else steps


def run_training(job: TrainJob, params: LoopParams, run_dir: str) -> TrainResult:
    """Train from run_dir's checkpoint (or from scratch) to the end of the plan; see the module docstring."""
    import torch

    steps = plan(job, params)
    if not steps:
        raise ContractError("training: no batch to train on (no training rows)")
    private_folder(run_dir)
    artifacts = private_folder(os.path.join(run_dir, ARTIFACTS))
    scheduler = job.scheduler(job.optimizer, len(steps)) if job.scheduler else None
    _seed_everything(params.seed)
    done, losses = _resume(job, scheduler, params, run_dir, len(steps))
    log_path = os.path.join(artifacts, LOSSES)
    write_private(log_path, "".join(json.dumps(row) + "\n" for row in losses))
    job.model.train()
    with open(log_path, "a", encoding="utf-8") as log:
        for step in range(done, len(steps)):
            epoch, group = steps[step]
            total = 0.0
            for index, batch in group:
                loss = job.loss(batch)
                if not torch.isfinite(loss.detach()).all():
                    what = job.describe(batch) if job.describe else f"{len(batch)} rows"
                    raise NonFiniteLoss(f"training: loss is {loss.item()} at optimizer step {step + 1} of "
                                        f"{len(steps)}, batch {index} of epoch {epoch} ({what}); "
                                        "the last checkpoint is kept")
                (loss / len(group)).backward()
                total += loss.item() / len(group)
            job.optimizer.step()
            if scheduler is not None:
                scheduler.step()
            job.optimizer.zero_grad(set_to_none=True)
            row = {"step": step + 1, "epoch": epoch, "loss": total, "lr": job.optimizer.param_groups[0]["lr"]}
            losses.append(row)
            log.write(json.dumps(row) + "\n")
            log.flush()
            if (step + 1) % params.checkpoint_every == 0 or step + 1 == len(steps):
                _save(job, scheduler, params, run_dir, step + 1, len(steps))
    return TrainResult(len(steps), done, losses, _write_curve(losses, artifacts))


def _seed_everything(seed: int) -> None:
    import numpy as np  # here, not at import: `xmdata --help` imports the params

    import torch

    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def _save(job: TrainJob, scheduler, params: LoopParams, run_dir: str, step: int, total: int) -> None:
    """One file holding everything a resume needs, replaced whole: a kill leaves the previous one."""
    import numpy as np  # here, not at import: `xmdata --help` imports the params

    import torch

    state = {
        "step": step, "total_steps": total, "params_hash": job.params_hash, "loop": params.model_dump(),
        "model": job.model.state_dict(), "optimizer": job.optimizer.state_dict(),
        "scheduler": scheduler.state_dict() if scheduler is not None else None,
        "rng": {"torch": torch.get_rng_state(), "numpy": np.random.get_state(), "python": random.getstate()},
    }
    buffer = io.BytesIO()
    torch.save(state, buffer)
    write_private(os.path.join(run_dir, CHECKPOINT), buffer.getvalue())


def _resume(job: TrainJob, scheduler, params: LoopParams, run_dir: str, total: int) -> tuple[int, list[dict]]:
    """(steps already done, their loss rows) from run_dir's checkpoint; (0, []) without one."""
    import numpy as np  # here, not at import: `xmdata --help` imports the params

    import torch

    path = os.path.join(run_dir, CHECKPOINT)
    if not os.path.exists(path):
        return 0, []
    state = torch.load(path, map_location="cpu", weights_only=False)  # our own file, in a private folder
    if state["params_hash"] != job.params_hash or state["loop"] != params.model_dump() or state["total_steps"] != total:
        raise ContractError(f"training: {run_dir} holds a checkpoint of a run with other params or data; "
                            "give another --out, or delete that folder to start over")
    job.model.load_state_dict(state["model"])
    job.optimizer.load_state_dict(state["optimizer"])
    if scheduler is not None:
        scheduler.load_state_dict(state["scheduler"])
    torch.set_rng_state(state["rng"]["torch"])
    np.random.set_state(state["rng"]["numpy"])
    random.setstate(state["rng"]["python"])
    log = os.path.join(run_dir, ARTIFACTS, LOSSES)
    rows = [json.loads(line) for line in open(log, encoding="utf-8")] if os.path.exists(log) else []
    rows = [row for row in rows if row["step"] <= state["step"]]
    if len(rows) != state["step"]:
        raise ContractError(f"training: {log} lacks the loss of steps its checkpoint has done; "
                            "delete the folder to start over")
    return state["step"], rows


def _write_curve(losses: list[dict], artifacts: str) -> dict[str, str]:
    """losses.parquet and loss_curve.png beside losses.jsonl."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from xmdata.runtime.figures import pyplot, save_png

    parquet, png = os.path.join(artifacts, "losses.parquet"), os.path.join(artifacts, "loss_curve.png")
    buffer = io.BytesIO()
    pq.write_table(pa.Table.from_pylist(losses), buffer)
    write_private(parquet, buffer.getvalue())
    with pyplot() as plt:
        figure, axes = plt.subplots(figsize=(6, 3.5))
        axes.plot([row["step"] for row in losses], [row["loss"] for row in losses],
                  marker="." if len(losses) < 50 else None)
        axes.set_xlabel("optimizer step")
        axes.set_ylabel("training loss")
        axes.grid(alpha=0.3)
        figure.tight_layout()
        save_png(figure, png, private=True, dpi=100)
    return {"losses": os.path.join(artifacts, LOSSES), "losses_parquet": parquet, "loss_curve": png}
