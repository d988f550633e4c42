"""The `mbr_utilities` stage: per unit, every ordered pair (candidate, pseudo-reference) of its candidates
whose language-ID label the target accepts (`lid_match`, as COMETKiwi scores them; the probability
threshold stays selection's, so it re-tunes without a model), and the metric's utility. No self-pairs:
N candidates give N(N−1) utilities, as comet-mbr averages them (comet/cli/mbr.py drops the j == i score).

chrF is sacrebleu's `CHRF().sentence_score(candidate, [reference])` (0–100), cheap: no memo. COMET
embeds each distinct sentence of a unit once (source and candidates, one batch a unit) and scores the
unit's pairs in one `estimate` call; each (source, candidate, reference) triple is kept in the memo of
model work (runtime/memo.py), so a rebuild scores only new pairs. A pool's shards are every engine's
candidates together (pooled here per shard), so a unit's pseudo-references span the engines.
"""
from __future__ import annotations

import itertools
import os
from importlib.metadata import version

import polars as pl
import pyarrow as pa

from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
from xmdata.runtime import storage
from xmdata.runtime.atomic import write_parquet_atomic
from xmdata.runtime.memo import MISSING
from xmdata.runtime.params import Params
from xmdata.runtime.placement import needs_gpu
from xmdata.runtime.stage import Stage
from xmdata.schemas.mbr import MBR_UTILITIES
from xmdata.tasks.build.rejects import no_rejects
from xmdata.tasks.build.unit_memo import memo_for

from .mbr_options import CHRF
from .options import _local_or_hub

STAGE = "mbr_utilities"
MEMO_KIND = "comet_mbr"
POOLED = "mbr_candidates"  # a pool's candidates of a shard, every engine's together: the stage's input
UNIT = ["id", "column", "element", "segment", "target_language"]
# Neither decides one pair's utility: which engine wrote it (its text does) and where the model lies
# (its content does, tasks/build/unit_memo.py).
MEMO_EXCLUDE = ("engine", "metric.name_or_path")


def mbr_spec(filters) -> ModelSpec:
    """The utility FILTERS name: chrF with sacrebleu's defaults and version (what decides its numbers),
    or a reference-based COMET on COMETKiwi's device, batch size and precision."""
    if filters.mbr_metric == CHRF:
        from sacrebleu.metrics import CHRF as Chrf

        return ModelSpec("chrf", "sacrebleu", options={"char_order": Chrf.CHAR_ORDER, "word_order": Chrf.WORD_ORDER,
                                                       "beta": Chrf.BETA, "sacrebleu": version("sacrebleu")})
    return ModelSpec("comet", _local_or_hub(filters.mbr_metric), device=filters.qe_device,
                     options={"batch_size": filters.qe_batch_size, "precision": filters.qe_precision})


class MbrUtilitiesShard(Params):
    metric: ModelSpec
    engine: str | None = None  # a one-engine build's label (its shards have no `engine` column)


def unit_candidates(table: pa.Table, engine: str | None) -> pl.DataFrame:
    """One row per unit: its source and its LID-matching candidates (engine, beam_rank, text) in the
    shard's order (engine's place in the pool, then beam rank)."""
    frame = pl.from_arrow(table)
    if "engine" not in frame.columns:
        frame = frame.with_columns(engine=pl.lit(engine, pl.String))
    ok = frame.filter((pl.col("status") == "ok") & pl.col("lid_match").fill_null(False))
    return ok.group_by(UNIT, maintain_order=True).agg(
        pl.col("source_text").first(), pl.col("engine"), pl.col("beam_rank"), pl.col("candidate"))


def chrf_utilities(units: pl.DataFrame, spec: ModelSpec) -> list[list[float]]:
    from sacrebleu.metrics import CHRF as Chrf

    chrf = Chrf(char_order=spec.option("char_order"), word_order=spec.option("word_order"), beta=spec.option("beta"))
    return [[chrf.sentence_score(texts[i], [texts[j]]).score for i, j in pairs_of(len(texts))]
            for texts in units["candidate"].to_list()]


def comet_utilities(units: pl.DataFrame, spec: ModelSpec) -> list[list[float]]:
    """Per unit, its pairs' COMET: the memo's where it holds them (one lookup for the shard: one listing,
    each entry file read once); a unit with any pair missing has its sentences embedded once (one batch:
    the unit alone, so its numbers do not depend on its neighbours) and its missing pairs scored in one call."""
    memo = memo_for(MEMO_KIND, spec)
    sources, candidates = units["source_text"].to_list(), units["candidate"].to_list()
    unit_inputs = [[[source, texts[i], texts[j]] for i, j in pairs_of(len(texts))]
                   for source, texts in zip(sources, candidates)]
    flat = [pair for inputs in unit_inputs for pair in inputs]
    found = memo.lookup(flat) if memo is not None else [MISSING] * len(flat)
    out, start = [], 0
    for source, texts, inputs in zip(sources, candidates, unit_inputs):
        held, start = found[start:start + len(inputs)], start + len(inputs)
        missing = [p for p, value in enumerate(held) if value is MISSING]
        if missing:
            model = get_model("reference_scorer", spec)  # loads only when a pair is not in the memo
            sentences = list(dict.fromkeys([source, *texts]))
            at = {text: row for row, text in enumerate(sentences)}
            vectors = model.embed(sentences)
            rows = lambda column: vectors[[at[inputs[p][column]] for p in missing]]  # noqa: E731
            scores = model.score(rows(0), rows(1), rows(2))
            for p, score in zip(missing, scores):
                held[p] = score
            if memo is not None:
                memo.counts.computed += len(missing)
                memo.store([inputs[p] for p in missing], scores)
        out.append(held)
    return out


def pairs_of(n: int) -> list[tuple[int, int]]:
    return list(itertools.permutations(range(n), 2))


def mbr_utilities(table: pa.Table, shard: MbrUtilitiesShard) -> tuple[pa.Table, pa.Table]:
    units = unit_candidates(table, shard.engine)
    scorer = chrf_utilities if shard.metric.backend == "chrf" else comet_utilities
    utilities = scorer(units, shard.metric) if units.height else []
    columns: dict[str, list] = {name: [] for name in MBR_UTILITIES.schema.names}
    for unit, values in zip(units.iter_rows(named=True), utilities):
        pairs = pairs_of(len(unit["candidate"]))
        for (i, j), value in zip(pairs, values):
            for key in UNIT:
                columns[key].append(unit[key])
            columns["source_text"].append(unit["source_text"])
            columns["engine"].append(unit["engine"][i])
            columns["beam_rank"].append(unit["beam_rank"][i])
            columns["ref_engine"].append(unit["engine"][j])
            columns["ref_beam_rank"].append(unit["beam_rank"][j])
            columns["utility"].append(value)
    return pa.table(columns, schema=MBR_UTILITIES.schema), no_rejects()


def mbr_utilities_stage(metric: ModelSpec, engine: str | None) -> Stage:
    comet = metric.backend != "chrf"
    return Stage(STAGE, version="1", fn=mbr_utilities, params=MbrUtilitiesShard(metric=metric, engine=engine),
                 memo_exclude=MEMO_EXCLUDE, memo_kinds=(MEMO_KIND,) if comet else (),
                 gpu=comet and needs_gpu(metric.device))


def pooled_shard_paths(scored_paths: list[list[str]], out: str, runs: list) -> list[str]:
    """The stage's input shards: a one-engine build's scored shards as they are; a pool's, every engine's
    shard k together (outputs.pooled_shards: engine, its rank, the project's target codes) in
    OUT/mbr_candidates/shard-k.parquet, rewritten with the same bytes when nothing changed."""
    if len(runs) == 1 and not runs[0].folder:
        return scored_paths[0]
    from xmdata.schemas.translation import TRANSLATION_CANDIDATES

    from .outputs import CANDIDATE_ORDER, pooled_shards

    schema = TRANSLATION_CANDIDATES.schema.append(pa.field("engine_rank", pa.int32()))
    paths = []
    frames = pooled_shards(scored_paths, runs, [*CANDIDATE_ORDER, "engine_rank", "beam_rank"])
    for first, frame in zip(scored_paths[0], frames):
        path = storage.join(out, POOLED, os.path.basename(first))
        write_parquet_atomic(frame.select(schema.names).to_arrow().cast(schema), path)
        paths.append(path)
    return paths


def build_utilities(scored_paths: list[list[str]], out: str, runs: list, filters):
    """The stage over every shard (a pool's pooled first), then OUT/mbr_utilities.parquet: its shards one
    after another, as candidates.parquet holds theirs. Returns the stage's report and what translate.json
    says of them (mbr.STORED_KEY)."""
    from xmdata.runtime.execution import run_stage
    from xmdata.runtime.parquet_shards import concat_parquet_files

    from .mbr import UTILITIES_FILE

    spec = mbr_spec(filters)
    one_engine = len(runs) == 1 and not runs[0].folder
    report = run_stage(mbr_utilities_stage(spec, runs[0].label if one_engine else None),
                       pooled_shard_paths(scored_paths, out, runs), out)
    concat_parquet_files(report.data_paths, storage.join(out, UTILITIES_FILE), MBR_UTILITIES.schema)
    return report, {"metric": filters.mbr_metric, "spec": spec.to_dict()}
