"""The distillation recipe's params, declared once: `xmdata train distill`'s flags, the train_distill
flow's form and the model card come from DistillParams. Light: pydantic only."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from xmdata.runtime.params import Params
from xmdata.tasks.train.loop_params import LoopParams, over_recipe_loop

# xVLM2Vec §3: 1 epoch, effective batch 128, learning rate 1e-5 (16 rows x 8 accumulated micro-batches).
DISTILL_LOOP = LoopParams(epochs=1, batch_size=16, accumulation=8)


class DistillParams(Params):
    """xVLM2Vec's self-knowledge distillation: a student copy of an embedding model learns to give a
    translation the embedding its frozen teacher copy gives the English text."""

    model: str = Field(description="the embedding model both copies start from: a local folder of a "
                       "decoder transformers builds (e.g. `xmdata models build-tiny DIR`'s decoder)")
    learning_rate: float = Field(1e-5, gt=0, description="AdamW's learning rate")
    weight_decay: float = Field(0.0, ge=0, description="AdamW's weight decay")
    max_length: int = Field(128, ge=2, description="tokens per text; longer texts are cut")
    device: Literal["cpu", "cuda"] = Field("cpu", description="where teacher and student run")
    held_out: float = Field(0.2, ge=0, lt=1, description="share of QA instances (by id) kept out of training "
                            "and evaluated before and after")
    loop: LoopParams = DISTILL_LOOP

    _over_the_recipe_loop = over_recipe_loop(DISTILL_LOOP)  # `--batch-size 4` alone keeps the 8 accumulated steps
