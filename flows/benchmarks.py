"""Multilingual CLIPScore's evaluation sets in one build: per set, the imported pairs (ids prefixed with
the set's name), their translations into every target when the set is English (the `translate`
stages of `xmdata translate`: candidates, LID, COMETKiwi, selection), every original and kept
translated pair scored (`xmdata score`), and the set's metric per language (`xmdata evaluate`).

A set's stages run in WORK/benchmarks/<set>/ and are reported as `benchmarks/<set>/<stage>`, so their
records, rejects and resumption are those of the single commands."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from xmdata.runtime.atomic import write_parquet_atomic
from xmdata.schemas.readers import read_any
from xmdata.tasks.evaluation.params import evaluate_options
from xmdata.tasks.evaluation.report import write_report
from xmdata.tasks.evaluation.runner import run_metric

from .benchmark_config import RATED, SET_TABLES, BenchmarksConfig
from .finish import step_report

from .score import score_pairs
from xmdata.tasks.translation.params import TranslateParams
from .translate import translate_texts

RESULTS_SCHEMA = pa.schema([("benchmark", pa.string()), ("metric", pa.string()), ("measure", pa.string()),
                            ("value", pa.float64())])


def prefixed(pairs: pa.Table, name: str) -> pa.Table:
    for column in ("id", "item_id"):
        if column in pairs.column_names:
            values = pc.binary_join_element_wise(name, pairs.column(column).cast(pa.string()), "/")
            pairs = pairs.set_column(pairs.column_names.index(column), column, values)
    return pairs


def with_translations(pairs: pa.Table, translated_path: str, columns: list[str]) -> pa.Table:
    """The pairs and, per kept translation, a copy of its pair in the target language (`<id>@<target>`,
    `<item_id>@<target>`: a translated item is an item of its own language)."""
    if not os.path.exists(translated_path):
        return pairs
    by_id = {r["id"]: r for r in pairs.to_pylist()}
    rows = []
    for kept in pq.read_table(translated_path).to_pylist():
        row = dict(by_id[kept["id"]], **{c: kept[c] for c in columns})
        row.update(id=f"{kept['id']}@{kept['target_language']}", language=kept["target_language"])
        if row.get("item_id") is not None:
            row["item_id"] = f"{row['item_id']}@{kept['target_language']}"
        rows.append(row)
    return pa.concat_tables([pairs, pa.Table.from_pylist(rows, pairs.schema)]) if rows else pairs


def selection_report(out: str, name: str, work: str):
    """Translation selection (LID and QE choosing one candidate) as a step with its refusals."""
    refused = pq.read_table(os.path.join(out, "translation_rejects.parquet"))
    chosen = pq.read_table(os.path.join(out, "translations.parquet")).num_rows
    return step_report(f"benchmarks/{name}/translation_selection", chosen, chosen - refused.num_rows, refused, work)


def flatten(result, prefix: str = "") -> list[tuple[str, float]]:
    """Every number of a metric's result, by its path (`per_language.fr.kendall_tau_b.statistic`)."""
    if isinstance(result, dict):
        return [item for k, v in sorted(result.items()) if k != "options" for item in flatten(v, f"{prefix}{k}.")]
    if isinstance(result, (int, float)) and not isinstance(result, bool):
        return [(prefix[:-1], float(result))]
    return []


def rated_pairs(rated: dict[str, tuple[pa.Table, str]]) -> tuple[pa.Table, str]:
    """The rated sets' pairs with their translations as one table, and the folder its image paths are
    under: the sets' one images folder (the config refuses rated sets with two)."""
    (root,) = {images for _, images in rated.values()}
    return pa.concat_tables([pairs for pairs, _ in rated.values()], promote_options="default"), root


def build_benchmarks(config: BenchmarksConfig, folders: dict[str, str], formats: dict[str, str], work: str,
                     shards: int):
    """(stage reports, distributions, markdown, {release table: image root}) of every set;
    benchmark_results.parquet in WORK, and rated_pairs.parquet when a set is rated pairs (VICR)."""
    reports, results, markdown, rated = [], [], [], {}
    for name, entry in config.sets.items():
        out = os.path.join(work, "benchmarks", name)
        table = SET_TABLES[formats[entry.source]]
        pairs = prefixed(read_any(os.path.join(folders[entry.source], f"{table}.parquet")), name)
        refs = "refs" if config.references and "refs" in pairs.column_names \
            and pairs.column("refs").null_count < pairs.num_rows else None  # VICR publishes none
        set_reports = []
        if entry.translate:
            columns = ["text"] + ([refs] if refs else [])
            params = TranslateParams(columns=columns, source="en", targets=config.targets,
                                     translator=config.translator, filters=config.filters)
            translated, _, _ = translate_texts(pairs.select(["id", *columns]), out, shards, params)
            set_reports += translated + [selection_report(out, name, work)]
            pairs = with_translations(pairs, os.path.join(out, "translated.parquet"), columns)
        if table == RATED:
            rated[name] = (pairs, entry.images)
        scored, _ = score_pairs(pairs, out, shards, entry.images, config, refs)  # config: its ScoringParams
        for report in set_reports + scored:
            report.stage = report.stage if report.stage.startswith("benchmarks/") else f"benchmarks/{name}/{report.stage}"
        reports += set_reports + scored
        evaluation = run_metric(entry.metric, evaluate_options(entry.metric, out,
                                                               os.path.join(out, "eval"), entry.options))
        write_report(evaluation, os.path.join(out, "eval"))
        results += [{"benchmark": name, "metric": entry.metric, "measure": m, "value": v}
                    for m, v in flatten(evaluation.result)]
        markdown.append(f"#### {name} ({entry.metric})\n\n{evaluation.markdown}")
    write_parquet_atomic(pa.Table.from_pylist(results, RESULTS_SCHEMA), os.path.join(work, "benchmark_results.parquet"))
    roots = {}
    if rated:
        table, roots[RATED] = rated_pairs(rated)
        write_parquet_atomic(table, os.path.join(work, f"{RATED}.parquet"))
    return reports, {}, "\n".join(markdown), roots
