"""The score metrics' options, one frozen model per metric (the others and their union: params.py)."""
from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from xmdata.runtime.params import Params
from xmdata.tasks.stage_params import Seed

LANGUAGE = "language column (default: 'language' when the table has one)"
Count = Annotated[int, Field(ge=1)]


class MetricParams(Params):
    input_help: ClassVar[str] = "the table to evaluate"
    id_column: str = Field("id", description="row id column, named in error messages")

    def runner_options(self, input_path: str, out: str) -> dict:
        """What the metric's runner reads (tasks/evaluation/runner.py): these params, the input and the output."""
        return {**self.model_dump(), "input": input_path, "out": out}


class CorrelationParams(MetricParams):
    """Kendall τ-b/τ-c, Spearman, Pearson of a score with human ratings"""
    input_help: ClassVar[str] = "table with a score and a human rating per row"
    metric: Literal["correlation"] = "correlation"
    score_column: str = "clip_score"
    rating_column: str = "rating"
    language_column: str | None = Field(None, description=LANGUAGE)
    rating_scale: tuple[float, float] | None = Field(None, description="declared rating scale MIN MAX; "
                                                     "a rating outside it is an error")
    item_column: str | None = Field(None, description="item id shared by the translations of one item: adds "
                                    "the cross-language Pearson matrix")
    qe_column: str | None = Field(None, description="translation QE (e.g. qe_score): adds bottom/top quartiles")


class ValseParams(MetricParams):
    """VALSE: caption scored above its foil, per phenomenon"""
    input_help: ClassVar[str] = "one row per (image, caption, foil)"
    metric: Literal["valse"] = "valse"
    caption_score_column: str = "caption_score"
    foil_score_column: str = "foil_score"
    phenomenon_column: str | None = Field(None, description="what results are grouped by; default: 'piece' "
                                          "(VALSE's 11 pieces, as its paper reports) when present, else 'phenomenon'")
    language_column: str | None = Field(None, description=LANGUAGE)


class XvnliParams(MetricParams):
    """XVNLI tasks 1-3: contradiction < neutral < entailment per image"""
    input_help: ClassVar[str] = "one row per (image, hypothesis) with its score and label"
    metric: Literal["xvnli"] = "xvnli"
    score_column: str = "clip_score"
    label_column: str = Field("label", description="contradiction, neutral or entailment")
    image_column: str = "image_id"
    language_column: str | None = Field(None, description=LANGUAGE)


class MarvlParams(MetricParams):
    """MaRVL tasks 1-2: true image pairs above false ones per caption"""
    input_help: ClassVar[str] = "one row per instance (caption + two images) with a score per image"
    metric: Literal["marvl"] = "marvl"
    score_columns: str = Field("left_score,right_score", description="comma-separated, one per image")
    label_column: str = Field("label", description="true/false")
    caption_column: str = "caption_id"
    language_column: str | None = Field(None, description=LANGUAGE)


class Pascal50sParams(MetricParams):
    """Pascal-50S accuracy per HC/HI/HM/MM"""
    input_help: ClassVar[str] = "one row per caption pair: two scores, two vote counts, a category"
    metric: Literal["pascal50s"] = "pascal50s"
    score_a_column: str = "score_a"
    score_b_column: str = "score_b"
    votes_a_column: str = "votes_a"
    votes_b_column: str = "votes_b"
    category_column: str = "category"
    seed: Seed = 0
