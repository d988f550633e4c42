"""A loop field given alone replaces that field of the recipe's loop, not the whole loop: the paper's
accumulated steps stay unless asked otherwise — from flags, a form or Python alike."""
from __future__ import annotations

from xmdata.tasks.train.clipscore_params import CLIPSCORE_LOOP, ClipscoreParams
from xmdata.tasks.train.params import DISTILL_LOOP, DistillParams


def test_a_loop_field_given_alone_keeps_the_recipes_other_loop_values():
    distill = DistillParams(model="m", loop={"batch_size": 4})
    assert distill.loop.batch_size == 4 and distill.loop.accumulation == DISTILL_LOOP.accumulation == 8
    assert DistillParams(model="m").loop == DISTILL_LOOP
    clip = ClipscoreParams(clip_model="m", loop={"epochs": 3})
    assert clip.loop.epochs == 3 and clip.loop.accumulation == CLIPSCORE_LOOP.accumulation
    assert clip.loop.batch_size == CLIPSCORE_LOOP.batch_size
