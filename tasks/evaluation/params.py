"""Each evaluation metric's options, declared once: one frozen model per metric, joined by `metric`
into a tagged union. It is `xmdata evaluate <metric>`'s flags, the evaluate flow's form and a
benchmark set's `options:`. Light on purpose: pydantic only."""
from __future__ import annotations

from typing import Annotated, ClassVar, Literal, Union

from pydantic import Field, TypeAdapter, ValidationError

from .metric_params import (Count, CorrelationParams, MarvlParams, MetricParams, Pascal50sParams, Seed,
                            ValseParams, XvnliParams)


class BackRetrievalParams(MetricParams):
    """BackRetrieval, XLR and CORR (Fain et al.) over embeddings"""
    input_help: ClassVar[str] = "source table (or both languages, split by --source/--target-language)"
    metric: Literal["backretrieval"] = "backretrieval"
    target: str | None = Field(None, description="target table (default: INPUT's rows in --target-language)")
    source_language: str | None = None
    target_language: str | None = None
    language_column: str = "language"
    text_column: list[str] | None = Field(None, description="text embedding of one model; repeat for several "
                                          "models (default text_embedding)")
    image_column: str = "image_embedding"
    pair_column: str | None = Field(None, description="key of parallel items (e.g. image_id): adds XLR")
    n: Count = Field(10_000, description="items sampled per side and seed")
    seeds: Count = Field(25, description="number of samples averaged")
    k: Count = Field(10, description="Recall@K")
    seed: Seed = 0


class MmmebParams(MetricParams):
    """MMMEB P@1 per task x language; McNemar against a second system"""
    input_help: ClassVar[str] = "one row per query with its query and gold-target embeddings"
    metric: Literal["mmmeb"] = "mmmeb"
    against: str | None = Field(None, description="second system's table (same ids): adds McNemar's test")
    query_column: str = "query_embedding"
    target_column: str = "target_embedding"
    task_column: str = "task"
    language_column: str = "language"
    target_key_column: str | None = Field(None, description="rows with the same key share one candidate")
    all_candidates_tasks: str = Field("C,classification", description="tasks ranked against every candidate")
    pools: str | None = Field(None, description="an MMMEB release's data/mmmeb_queries.parquet: score on its "
                              "published pools; INPUT is then one system's query embeddings (id, embedding)")
    candidates: str | None = Field(None, description="with --pools: that system's candidate embeddings "
                                   "(id, embedding)")
    against_candidates: str | None = Field(None, description="with --pools and --against: the second system's")
    seed: Seed = 0


class CaptionStatsParams(MetricParams):
    """Crossmodal-3600 Table 1: captions, replication, words, characters"""
    input_help: ClassVar[str] = "one row per caption"
    metric: Literal["caption-stats"] = "caption-stats"
    text_column: str = "text"
    image_column: str = "image_id"
    language_column: str = "language"


class CaptionRatingsParams(MetricParams):
    """Crossmodal-3600 Table 2: % Good+, % Med+, % Bad of median ratings"""
    input_help: ClassVar[str] = "one row per rating: EXCELLENT, GOOD, MEDIUM, BAD or NOT-ENOUGH-INFO"
    metric: Literal["caption-ratings"] = "caption-ratings"
    item_column: str = "item_id"
    rating_column: str = "rating"
    language_column: str = "language"


class CiderParams(MetricParams):
    """CIDEr per system and language; ΔCIDEr vs side-by-side gains"""
    input_help: ClassVar[str] = "candidate captions: one row per system, language and image"
    metric: Literal["cider"] = "cider"
    references: str | None = Field(None, description="reference captions (language, image, text); required")
    text_column: str = "text"
    image_column: str = "image_id"
    system_column: str = "system"
    language_column: str = "language"
    sxs: str | None = Field(None, description="side-by-side table: model2, model1, language, sxs_gain")


class CiderGainParams(MetricParams):
    """correlation of ΔCIDEr with side-by-side gains (Table 5 -> 6)"""
    input_help: ClassVar[str] = "one row per model comparison with its ΔCIDEr and human gain"
    metric: Literal["cider-gain"] = "cider-gain"
    delta_column: str = "delta_cider"
    gain_column: str = "sxs_gain"


METRIC_PARAMS = (CorrelationParams, ValseParams, XvnliParams, MarvlParams, Pascal50sParams, BackRetrievalParams,
                 MmmebParams, CaptionStatsParams, CaptionRatingsParams, CiderParams, CiderGainParams)
EvaluationParams = Annotated[Union[METRIC_PARAMS], Field(discriminator="metric")]
METRICS = {model.model_fields["metric"].default: model for model in METRIC_PARAMS}


def metric_params(metric: str, options: dict | None = None) -> MetricParams:
    """A metric's params from options by name (a benchmark set's `options:`); ValueError in one line."""
    try:
        return TypeAdapter(EvaluationParams).validate_python({**(options or {}), "metric": metric})
    except ValidationError as exc:
        raise ValueError(f"{metric}: " + "; ".join(f"{'.'.join(map(str, e['loc'][1:])) or 'options'}: {e['msg']}"
                                                 for e in exc.errors())) from None


def evaluate_options(metric: str, input_path: str, out: str, overrides: dict | None = None) -> dict:
    """What a metric's runner reads: its params with their defaults, then the input and output."""
    return metric_params(metric, overrides).runner_options(input_path, out)
