"""The training loop's params (pydantic only: `xmdata train … --help` builds its flags from them
without importing the loop, numpy or pyarrow)."""
from __future__ import annotations

from pydantic import Field

from xmdata.runtime.params import Params
from xmdata.tasks.stage_params import Seed


class LoopParams(Params):
    """How a recipe's run goes through its data: the same values give the same weights, killed or not."""

    epochs: int = Field(1, ge=1, description="passes over the training pairs")
    batch_size: int = Field(8, ge=1, description="rows per micro-batch (one forward and backward)")
    accumulation: int = Field(1, ge=1, description="micro-batches whose gradients make one optimizer step "
                              "(effective batch = batch_size x accumulation)")
    checkpoint_every: int = Field(50, ge=1, description="optimizer steps between two checkpoints")
    max_steps: int | None = Field(None, ge=1, description="stop after this many optimizer steps (default: all epochs)")
    seed: Seed = 0
