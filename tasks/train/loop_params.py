"""The training loop's params (pydantic only: `xmdata train … --help` builds its flags from them
without importing the loop, numpy or pyarrow)."""
from __future__ import annotations

from pydantic import Field, field_validator

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


def over_recipe_loop(defaults: LoopParams):
    """A recipe's `loop` field validator: loop fields given (flags, a form, a config) replace the
    recipe's own loop values, not LoopParams' generic ones — `--batch-size 4` alone keeps the
    recipe's accumulation. Assign it in the recipe's params class body."""
    def merge(cls, value):
        return {**defaults.model_dump(), **value} if isinstance(value, dict) else value

    return field_validator("loop", mode="before")(merge)
