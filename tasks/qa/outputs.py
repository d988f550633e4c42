"""Selection and the QA translation's files, from the candidate shards alone (no model):

    qa_parallel.parquet   query and positive of every kept instance x target, as independent pairs
    qa_rejects.parquet    every refused instance x target (stage select_qa, its reason)
    qa_counts.parquet     instances per task x target x outcome (kept, or the reason)
    qa_report.json/.md    the same counts, plus what the task filter and per-task cap left out

Per instance and target the candidate kept is the best-ranked one whose extraction succeeded; when
candidates were scored, the one whose parts all pass language ID with the highest mean QE, by the
texts' rule (tasks/translation/select.py `best_first`: means within DECISION_TOLERANCE of it are
ties, won by the better beam rank). Thresholds keep `>=`; an instance decided within the tolerance
is counted in the report's `near_threshold`.
"""
from __future__ import annotations

import os
from typing import Iterable

import polars as pl
import pyarrow as pa

from xmdata.runtime import storage
from xmdata.runtime.atomic import (ParquetStream, local_temp_folder, write_json_atomic, write_parquet_atomic,
                                   write_text_atomic)
from xmdata.runtime.parquet_shards import together
from xmdata.schemas.tables import REJECTS_SCHEMA
from xmdata.schemas.translation import QA_COUNTS, QA_PARALLEL
from xmdata.tasks.build import sorted_merge

from xmdata.tasks.build.rejects import rejects_in_order
from xmdata.tasks.translation.params import TranslateQaParams
from xmdata.tasks.decisions import near
from xmdata.tasks.translation.select import best_first, with_engine_rank

STAGE = "select_qa"


KEYS = ["id", "target_language"]
CANDIDATE = ["engine_rank", "beam_rank"]  # a candidate of an instance x target: its engine's place, its rank


def ranked_by_engine(candidates: pl.DataFrame) -> pl.DataFrame:
    """CANDIDATES with `engine_rank`: as given (a pool's), or 0 (one engine's)."""
    return candidates if "engine_rank" in candidates.columns else with_engine_rank(candidates, None)


def score_candidates(candidates: pl.DataFrame, min_lid_prob: float) -> pl.DataFrame:
    """One row per instance x target x engine x beam: extracted, lid_ok, mean QE, and `lid_near` (a part's
    language-ID probability within the tolerance of the threshold)."""
    lid_match = pl.col("lid_match").fill_null(False)
    return ranked_by_engine(candidates).group_by([*KEYS, *CANDIDATE], maintain_order=True).agg(
        pl.col("task").first(), pl.col("status").first(), (pl.col("status") == "ok").all().alias("extracted"),
        (lid_match & (pl.col("lid_prob").fill_null(0) >= min_lid_prob)).all().alias("lid_ok"),
        pl.col("qe_score").mean().alias("qe"), (lid_match & near(pl.col("lid_prob"), min_lid_prob)).any()
        .alias("lid_near"))


def best_candidates(usable: pl.DataFrame, scored: bool) -> pl.DataFrame:
    """Per instance x target the best usable beam of any engine (ties: the engine listed first, then the
    better rank); `close_call` where a runner-up's mean QE is within twice the tolerance of the best
    (noise that could move it into or out of the tie leaves the count)."""
    if not scored:
        return usable.sort(CANDIDATE).group_by(KEYS).first().with_columns(close_call=pl.lit(False))
    qe_key, close = best_first(pl.col("qe").fill_null(float("-inf")), KEYS)
    ranked = usable.with_columns(qe_key=qe_key, close=close)
    best = ranked.sort(["qe_key", *CANDIDATE], descending=[True, False, False]).group_by(KEYS).agg(
        pl.all().exclude("qe_key", "close").first(), (pl.col("close").sum() > 1).alias("close_call"))
    return best


def select_candidates(candidates: pl.DataFrame, scored: bool, min_lid_prob: float, min_qe: float | None
                      ) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(kept part rows, one row per refused instance x target with its reason). CANDIDATES carry
    `engine_rank` (select.with_engine_rank), or are one engine's."""
    keys = KEYS
    candidates = ranked_by_engine(candidates)
    per_candidate = score_candidates(candidates, min_lid_prob).drop("lid_near")
    usable = per_candidate.filter(pl.col("extracted") & (pl.col("lid_ok") if scored else True))
    best = best_candidates(usable, scored).drop("close_call")
    if scored and min_qe is not None:
        best = best.filter(pl.col("qe") >= min_qe)
    kept = candidates.join(best.select([*keys, *CANDIDATE]), on=[*keys, *CANDIDATE])
    first = per_candidate.sort(CANDIDATE, nulls_last=False).group_by(keys).agg(
        pl.col("task").first(), pl.col("status").first(), pl.col("extracted").any())
    had_usable = usable.select(keys).unique().with_columns(pl.lit(True).alias("usable"))
    refused = first.join(best.select(keys), on=keys, how="anti").join(had_usable, on=keys, how="left").with_columns(
        pl.when(~pl.col("extracted")).then(pl.col("status"))
        .when(pl.col("usable").fill_null(False)).then(pl.lit("below_min_qe"))
        .otherwise(pl.lit("no_candidate_in_target_language")).alias("reason"))
    return kept, refused.select("id", "task", "target_language", "reason").sort("id", "target_language")


def parallel_schema(passthrough: pa.Table | None) -> pa.Schema:
    extra = [] if passthrough is None else [f for f in passthrough.schema if f.name != "id"]
    return pa.schema(list(QA_PARALLEL.schema) + extra)


def parallel_table(kept: pl.DataFrame, source_language: str, passthrough: pa.Table | None = None) -> pa.Table:
    """The parallel corpus; input columns the translation did not use follow, joined by id."""
    frame = kept.sort("id", "target_language", "part").with_columns(
        pl.lit(source_language).alias("source_language"), pl.col("candidate").alias("target_text"))
    schema = QA_PARALLEL.schema
    table = frame.select(schema.names).to_arrow().cast(schema)
    if passthrough is None:
        return table
    extra = pl.from_arrow(passthrough).unique("id", keep="first")
    joined = pl.from_arrow(table).join(extra, on="id", how="left", maintain_order="left")
    return joined.select(parallel_schema(passthrough).names).to_arrow().cast(parallel_schema(passthrough))


def near_threshold_counts(candidates: pl.DataFrame, scored: bool, min_lid_prob: float, min_qe: float | None,
                          targets: list[str]) -> dict[str, int]:
    """Per target, the instances decided within DECISION_TOLERANCE: a part's LID probability or the
    best mean QE that close to its threshold, or a runner-up that close to the best."""
    if not scored:
        return {t: 0 for t in targets}
    per_candidate = score_candidates(candidates, min_lid_prob)
    lid_near = per_candidate.filter("extracted").group_by(KEYS).agg(pl.col("lid_near").any())
    best = best_candidates(per_candidate.filter(pl.col("extracted") & pl.col("lid_ok")), scored)
    best = best.with_columns(qe_near=pl.col("close_call") | near(pl.col("qe"), min_qe)).select(*KEYS, "qe_near")
    flagged = lid_near.join(best, on=KEYS, how="left").filter(pl.col("lid_near") | pl.col("qe_near").fill_null(False))
    per_target = dict(flagged.group_by("target_language").len().iter_rows())
    return {t: per_target.get(t, 0) for t in targets}


def count_outcomes(kept: pl.DataFrame, refused: pl.DataFrame) -> pl.DataFrame:
    done = kept.select("id", "task", "target_language").unique().with_columns(pl.lit("kept").alias("outcome"))
    both = pl.concat([done, refused.rename({"reason": "outcome"}).select(done.columns)])
    return both.group_by("task", "target_language", "outcome").agg(pl.len().cast(pl.Int64).alias("instances")
                                                                  ).sort("task", "target_language", "outcome")


def counts_markdown(counts: pl.DataFrame, selection: dict) -> str:
    wide = counts.pivot("outcome", index=["task", "target_language"], values="instances").fill_null(0)
    columns = ["task", "target_language"] + sorted(c for c in wide.columns if c not in ("task", "target_language"))
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(v) for v in row) + " |" for row in wide.select(columns).sort(columns[:2]).rows()]
    lines += ["", "| task | rows | excluded | over cap | selected |", "| --- | ---: | ---: | ---: | ---: |"]
    lines += [f"| {t} | {s['rows']} | {s['excluded']} | {s['over_cap']} | {s['selected']} |"
              for t, s in selection.items()]
    return "\n".join(lines) + "\n"


def qa_rejects(refused: pl.DataFrame) -> pa.Table:
    """Every refused instance x target of REFUSED, in its order, as rejects (`task -> target`)."""
    return rejects_in_order(STAGE, ((i, reason, f"{k} -> {t}") for i, k, t, reason in
                                    refused.select("id", "task", "target_language", "reason").iter_rows()))


def write_qa_outputs(out: str, shards: Iterable[str | pa.Table], params: TranslateQaParams, labels: dict,
                     selection: dict, passthrough: pa.Table | None = None) -> dict:
    """Write the selection's files from the candidate shards SHARDS (tables, or paths of them: a pool's
    qa_candidates.parquet shard by shard, every engine's candidates of an instance together); returns
    the report (counts as rows, and the markdown). `passthrough`: id + input columns the translation did not use, carried
    into qa_parallel. An instance's candidates are all in its shard: each shard (small ones together)
    is selected on its own and the rows merged in order (tasks/build/sorted_merge.py), so a shard is
    what is held."""
    filters = params.filters
    scored = filters is not None  # unscored: every extracted candidate passes, and none is below a QE
    min_lid_prob, min_qe = (filters.min_lid_prob, filters.min_qe) if scored else (0.0, None)
    counts, kept_per_target, near = [], dict.fromkeys(params.targets, 0), dict.fromkeys(params.targets, 0)
    engines = [engine.engine_label() for engine in params.engines]
    chosen = {t: dict.fromkeys(engines, 0) for t in params.targets}  # a pool: instances each engine's candidate won
    with local_temp_folder(out) as folder:
        parallel_files, refused_files = [], []
        tables = (storage.read_parquet(s) if isinstance(s, str) else s for s in shards)
        for index, together_shards in enumerate(together(tables)):
            frame = with_engine_rank(pl.from_arrow(together_shards), engines)
            kept, refused = select_candidates(frame, scored, min_lid_prob, min_qe)
            parallel_files.append(os.path.join(folder, f"parallel-{index:06d}.parquet"))
            sorted_merge.write_sorted(parallel_table(kept, params.source, passthrough), parallel_files[-1])
            refused_files.append(os.path.join(folder, f"refused-{index:06d}.parquet"))
            sorted_merge.write_sorted(refused.to_arrow(), refused_files[-1])
            counts.append(count_outcomes(kept, refused))
            for target in params.targets:
                kept_per_target[target] += kept.filter(pl.col("target_language") == target)["id"].n_unique()
            if params.is_pool:
                won = kept.unique(["id", "target_language"]).group_by("target_language", "engine").len()
                for target, engine, n in won.iter_rows():
                    chosen[target][engine] += n
            for target, count in near_threshold_counts(frame, scored, min_lid_prob, min_qe, params.targets).items():
                near[target] += count
            del frame, together_shards, kept, refused
            pa.default_memory_pool().release_unused()
        with ParquetStream(storage.join(out, "qa_parallel.parquet"), parallel_schema(passthrough)) as stream:
            for chunk in sorted_merge.merge_sorted(parallel_files, ["id", "target_language", "part"], ["id"]):
                stream.write(chunk.to_arrow())
        with ParquetStream(storage.join(out, "qa_rejects.parquet"), REJECTS_SCHEMA) as stream:
            for chunk in sorted_merge.merge_sorted(refused_files, ["id", "target_language"], ["id"]):
                stream.write(qa_rejects(chunk))
    counts = pl.concat(counts).group_by("task", "target_language", "outcome").agg(
        pl.col("instances").sum()).sort("task", "target_language", "outcome")
    write_parquet_atomic(counts.to_arrow().cast(QA_COUNTS.schema), storage.join(out, "qa_counts.parquet"))
    markdown = counts_markdown(counts, selection)
    report = {"counts": counts.to_dicts(), "input_selection": selection, "labels": labels,
              "kept_per_target": kept_per_target, "near_threshold": near,
              **({"chosen_per_engine": chosen} if params.is_pool else {})}
    write_json_atomic(report, storage.join(out, "qa_report.json"))
    write_text_atomic(markdown, storage.join(out, "qa_report.md"))
    return {**report, "markdown": markdown}
