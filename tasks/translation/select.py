"""Selection: per unit and target, the LID-passing candidate with the highest QE — cheap, no model.

Rerun with other thresholds as often as wanted: it reads candidates.parquet only. QE scores within
DECISION_TOLERANCE of the best are ties, won by the better beam rank, so kernel noise does not pick
another beam (`best_first`: the one rule, which Q/A selection in tasks/qa/outputs.py uses too);
thresholds keep `>=` and a unit decided within the tolerance is flagged `near_threshold`. A pool's
candidates are chosen across its engines: a tie goes to the engine listed first, then to the beam rank. Sentence
segments (long texts split on request) are joined back, and the joined text is kept only when every
segment was. MBR (tasks/translation/mbr.py) ranks by expected utility instead, under the same rule.
"""
from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from xmdata.schemas.translation import TRANSLATIONS
from xmdata.tasks.decisions import DECISION_TOLERANCE, near

UNIT = ["id", "column", "element", "segment", "target_language"]
NO_SPACE_SCRIPTS = {"zh", "ja", "th", "lo", "km", "my", "bo"}  # joined without spaces


def best_first(score: pl.Expr, over: list[str], eligible: pl.Expr | None = None) -> tuple[pl.Expr, pl.Expr]:
    """(sort key, close) of the best-candidate rule, for texts and Q/A alike: an eligible score within
    DECISION_TOLERANCE of its group's best sorts as the best, so the better beam rank decides among them;
    `close` marks one within twice the tolerance, so that noise which could move a runner-up into or
    out of the tie (the edge at one tolerance) leaves the near_threshold count alone."""
    gap = (score if eligible is None else score.filter(eligible)).max().over(over) - score
    eligible = pl.lit(True) if eligible is None else eligible
    return (pl.when(eligible & (gap <= DECISION_TOLERANCE)).then(pl.lit(float("inf"))).otherwise(score),
            eligible & (gap <= 2 * DECISION_TOLERANCE))


def with_engine_rank(candidates: pl.DataFrame, engines: list[str] | None) -> pl.DataFrame:
    """`engine_rank`: the candidate's engine's place in the pool (ENGINES, its labels in order): ties in
    QE go to the engine listed first, then to the better beam rank. Candidates of a run made before
    the `engine` column all share rank 0, as one engine's do."""
    if "engine" not in candidates.columns:
        candidates = candidates.with_columns(engine=pl.lit(None, pl.String))
    if not engines or len(engines) == 1:
        return candidates.with_columns(engine_rank=pl.lit(0, pl.Int32))
    return candidates.with_columns(engine_rank=pl.col("engine").replace_strict(
        engines, list(range(len(engines))), default=len(engines), return_dtype=pl.Int32))


def choose_per_segment(candidates: pl.DataFrame, min_lid_prob: float, min_qe: float | None,
                       engines: list[str] | None = None, mbr=None) -> pl.DataFrame:
    """MBR: an MbrSelection (mbr.py): the expected utility ranks instead of QE, and it keeps each
    unit's decision."""
    candidates = with_engine_rank(candidates, engines)
    lid_ok = (pl.col("status") == "ok") & pl.col("lid_match").fill_null(False)
    passed = lid_ok & (pl.col("lid_prob") >= min_lid_prob) & pl.col("qe_score").is_not_null()
    ranked = candidates.with_columns(passed=passed)
    if mbr is not None:
        ranked = mbr.with_expected_utility(ranked)
    score, eligible = ("qe_score", "passed") if mbr is None else ("expected_utility", "mbr_eligible")
    key, close = best_first(pl.col(score), UNIT, pl.col(eligible))
    ranked = ranked.with_columns(
        qe_key=key, close=close,
        lid_near=lid_ok & near(pl.col("lid_prob"), min_lid_prob),
    ).sort([*UNIT, "passed", "qe_key", "engine_rank", "beam_rank"], descending=[False] * 5 + [True, True, False, False],
           nulls_last=True)
    if mbr is not None:
        mbr.decide(ranked)
    best = ranked.group_by(UNIT, maintain_order=True).agg(
        pl.col("source_text").first(), pl.col("status").first().alias("unit_status"),
        pl.col("candidate", "engine", "beam_rank", "sequence_score", "lid_label", "lid_prob", "qe_score").first(),
        (pl.col("status") == "ok").sum().cast(pl.Int32).alias("candidates"),
        pl.col("passed").sum().cast(pl.Int32).alias("lid_passed"),
        ((pl.col("close").sum() > 1) | pl.col("lid_near").any()).alias("near_threshold"))
    reason = (pl.when(pl.col("unit_status") != "ok").then(pl.col("unit_status"))
              .when(pl.col("lid_passed") == 0).then(pl.lit("no_candidate_in_target_language"))
              .when(pl.lit(min_qe is not None) & (pl.col("qe_score") < (min_qe or 0.0)))
              .then(pl.lit("below_min_qe")))
    return best.with_columns(
        reason=reason,
        near_threshold=pl.col("near_threshold") | ((pl.col("lid_passed") > 0) & near(pl.col("qe_score"), min_qe)),
        # A below-threshold text stays visible for inspection; other rejects have no text to show.
        text=pl.when(pl.col("lid_passed") > 0).then(pl.col("candidate")))


def join_segments(segments: pl.DataFrame) -> pl.DataFrame:
    key = [k for k in UNIT if k != "segment"]
    joiner = pl.when(pl.col("target_language").str.split("_").list.first().is_in(list(NO_SPACE_SCRIPTS)))
    return segments.sort(UNIT).group_by(key, maintain_order=True).agg(
        pl.col("source_text").str.join(" "),
        pl.col("text").str.join(" ").alias("spaced"), pl.col("text").str.join("").alias("unspaced"),
        pl.col("text").null_count().alias("missing"),
        pl.col("beam_rank").max(), pl.col("sequence_score", "qe_score").mean(),
        pl.col("lid_label").first(), pl.col("lid_prob").min(),
        pl.col("engine").unique(maintain_order=True).sort().str.join("+"),  # segments may come from several
        pl.col("candidates", "lid_passed").min(), pl.col("reason").drop_nulls().first(),
        pl.col("near_threshold").any(),
    ).with_columns(text=pl.when(pl.col("missing") == 0).then(
        joiner.then(pl.col("unspaced")).otherwise(pl.col("spaced"))))


class QuartileRanks:
    """`qe_quartile` 1..4: the rank of `qe_score` among the kept units of a target, ties by unit order
    (ORDER), in four equal parts. Built from every kept unit's score (4 bytes a unit: all a selection
    holds of the whole table), it assigns units that arrive in ORDER, a chunk at a time, exactly as a
    rank over the whole table would: a tie that a quarter's edge splits is ranked by arrival."""

    def __init__(self, kept_scores: dict[str, list[np.ndarray]]):
        self.scores = {t: np.sort(np.concatenate(parts)) for t, parts in kept_scores.items()}
        self._ranked: dict[tuple[str, float | str], int] = {}  # split ties (NaN as 'nan'): how many ranked so far

    @staticmethod
    def kept_scores(units: pl.DataFrame) -> dict[str, np.ndarray]:
        kept = units.filter(pl.col("status") == "ok")
        return {t: group["qe_score"].to_numpy() for (t,), group in kept.group_by("target_language")}

    def assign(self, units: pl.DataFrame) -> pl.DataFrame:
        """UNITS (the next ones in ORDER) with `qe_quartile`."""
        quartile = np.zeros(units.height, dtype=np.int8)
        ok = (units["status"] == "ok").to_numpy()
        targets = units["target_language"].to_numpy()
        for target in np.unique(targets[ok]):
            rows = np.flatnonzero(ok & (targets == target))
            ranked, size = self.scores[target], len(self.scores[target])
            scores = units["qe_score"].to_numpy()[rows]
            rank = np.searchsorted(ranked, scores, "left")
            ties_end = np.searchsorted(ranked, scores, "right")
            edges = -(-np.arange(1, 4) * size // 4)  # the first rank of quarters 2, 3, 4
            split = ((rank[:, None] < edges) & (edges < ties_end[:, None])).any(axis=1)
            for i in np.flatnonzero(split):
                tie = (target, "nan" if np.isnan(scores[i]) else float(scores[i]))  # NaN: a tie too, as polars ranks
                before = self._ranked.get(tie, 0)
                self._ranked[tie] = before + 1
                rank[i] += before
            quartile[rows] = rank * 4 // size + 1
        return units.with_columns(qe_quartile=pl.when(pl.Series(ok)).then(pl.Series(quartile)).cast(pl.Int8))


ORDER = ["target_language", "id", "column", "element"]  # translations.parquet's rows, nulls first


def shard_units(candidates: pa.Table, min_lid_prob: float = 0.5, min_qe: float | None = None,
                engines: list[str] | None = None, mbr=None) -> pl.DataFrame:
    """One row per unit and target of CANDIDATES (every candidate of a unit: one shard), in ORDER, with
    the TRANSLATIONS columns but `qe_quartile`, `near_threshold` and the chosen candidate's `engine`."""
    segments = choose_per_segment(pl.from_arrow(candidates), min_lid_prob, min_qe, engines, mbr)
    units = join_segments(segments).with_columns(
        status=pl.when(pl.col("reason").is_null()).then(pl.lit("ok")).otherwise(pl.lit("rejected")))
    return units.sort(ORDER, nulls_last=False)


def select_units(candidates: pa.Table, min_lid_prob: float = 0.5, min_qe: float | None = None,
                 engines: list[str] | None = None) -> pl.DataFrame:
    """`shard_units` with `qe_quartile`, for candidates held whole."""
    units = shard_units(candidates, min_lid_prob, min_qe, engines)
    scores = QuartileRanks.kept_scores(units)
    return QuartileRanks({t: [s] for t, s in scores.items()}).assign(units)


def near_threshold_counts(units: pl.DataFrame) -> dict[str, int]:
    """Per target, the units decided within DECISION_TOLERANCE (a threshold or a runner-up that close)."""
    counts = units.group_by("target_language").agg(pl.col("near_threshold").sum()).sort("target_language")
    return dict(counts.iter_rows())


def select_translations(candidates: pa.Table, min_lid_prob: float = 0.5, min_qe: float | None = None,
                        engines: list[str] | None = None) -> pa.Table:
    units = select_units(candidates, min_lid_prob, min_qe, engines)
    return units.select(TRANSLATIONS.schema.names).to_arrow().cast(TRANSLATIONS.schema)
