"""The multilingual CLIPScore fine-tuning recipe's params, declared once: `xmdata train clipscore`'s
flags, the train_clipscore flow's form and the model card come from ClipscoreParams. Light: pydantic only.

What the paper (Gomes, Zerva and Martins, 2025, §3) fixes: the CLIP contrastive loss on both datasets,
the Pearson-correlation loss against human ratings on the rated pairs, batches alternating between the
two tasks and never mixed, gradients accumulated over two steps. What it leaves open, with the value
chosen here: learning rate, batch size, epochs, optimiser, temperature (the model's own learned
logit_scale, trained as open_clip trains it), how the two losses of a rated batch are weighted (summed,
`pearson_weight` 1) and what an epoch is when the two tables differ in size (the longer table once, the
shorter cycled)."""
from __future__ import annotations


from pydantic import Field, field_validator

from xmdata.runtime.params import Params
from xmdata.tasks.stage_params import ClipModel, ClipScoreWeight, ModelDevice, Pretrained, ScoringParams
from xmdata.tasks.train.loop_params import LoopParams, over_recipe_loop

# One caption batch then one rated batch per optimizer step: the paper's two accumulated steps.
CLIPSCORE_LOOP = LoopParams(epochs=1, batch_size=32, accumulation=2)


class ClipscoreParams(Params):
    """Fine-tune an open_clip model as the multilingual CLIPScore paper does: contrastive on captions,
    contrastive + Pearson against human ratings on rated pairs, the two tasks alternating."""

    clip_model: ClipModel  # the model fine-tuned
    pretrained: Pretrained = None
    captions_table: str = Field("clip_scores", min_length=1, description="release table of captions and their "
                                "translations with images (data/<name>.parquet: image_path, text[, language, "
                                "status]), the Crossmodal-3600-style task; rows whose status is not ok are left out")
    ratings_table: str = Field("rated_pairs", min_length=1, description="release table of rated pairs "
                               "(data/<name>.parquet: image_path, text, rating, split[, language, refs]), the "
                               "VICR-style task")
    train_split: str = Field("train", min_length=1, description="rated pairs of this split train")
    eval_split: str = Field("test", min_length=1, description="rated pairs of this split are held out and "
                            "evaluated before and after (correlation of CLIPScore with the rating)")
    image_root: str | None = Field(None, description="folder the tables' image paths are under (default: where "
                                   "the release's build recorded each table's images, else the release folder)")
    learning_rate: float = Field(1e-5, gt=0, description="AdamW's learning rate (the paper does not give one)")
    weight_decay: float = Field(0.0, ge=0, description="AdamW's weight decay")
    pearson_weight: float = Field(1.0, ge=0, description="a rated batch's loss is contrastive + pearson_weight x "
                                  "(1 - Pearson r of CLIPScore and rating); 0 trains the contrastive loss alone")
    weight: ClipScoreWeight = ScoringParams.model_fields["weight"].default  # the evaluation's w: scoring's own
    device: ModelDevice = "cpu"  # where it trains, and scores the held-out pairs
    loop: LoopParams = CLIPSCORE_LOOP

    _over_the_recipe_loop = over_recipe_loop(CLIPSCORE_LOOP)  # `--batch-size 8` alone keeps the two accumulated steps

    @field_validator("loop")
    @classmethod
    def _both_tasks_in_every_step(cls, loop: LoopParams) -> LoopParams:
        if loop.accumulation % 2:
            raise ValueError("--accumulation must be even: an optimizer step sums one caption batch and one rated "
                             "batch (the paper's two accumulated steps), or several of each")
        return loop
