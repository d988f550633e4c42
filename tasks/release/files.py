"""The files of a release, gathered from its build folder: one Parquet file per table, rows in a
total order of their own values, one rejects file per stage, the plots, and the build's reports.

Row order never depends on which shard finished first, and values not on the shard plan: model
calls have one shape per input length (models/token_batches.py), so the demo's data files were
byte-identical with 1, 3, 8 and 16 shards on the machine measured. Other CPU kernels may move a QE
score by ~6e-8 with its place in a batch (tests/models/test_batch_independence.py), which is why
`shards` stays part of the config and its overrides are recorded in the manifest."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.runtime import storage
from xmdata.runtime.atomic import replace_atomically, write_parquet_atomic
from xmdata.schemas.translation import ENGINE_FIELD
from xmdata.tasks.translation.pool import ENGINES_FOLDER

# release name: (build file or shard glob, what it is). Only those the build made are published.
TABLES = {
    "image_downloads": ("image_download/downloads.parquet", "every row of the image download with its status "
                        "(ok or the reason there is no image), as of the build"),
    "clean_matches": ("clean/matches.parquet", "every near-duplicate and contamination match of the release's "
                      "images and captions (dedup:, contamination:): id, match_id, match_source, method, score, "
                      "measure and its unit, the check and the table"),
    "captions": ("language_id/data/*.parquet", "captions with their fastText language label and probability"),
    "images": ("selection.parquet", "geo-diverse images selected per language, with the back-off level"),
    "images_per_language": ("selection_summary.parquet", "selected images per language and level"),
    "images_optimal": ("selection_optimal.parquet", "the optimal (min-cost flow) selection beside the greedy one"),
    "images_per_language_optimal": ("selection_summary_optimal.parquet", "optimal selection per language and level"),
    "translations": ("translations.parquet", "the chosen translation (or the reason for none) per text and target"),
    "translated_captions": ("translated.parquet", "kept translations in the input's shape"),
    "translation_candidates": ("candidates.parquet", "every beam candidate with LID and QE scores"),
    "qa_parallel": ("qa_parallel.parquet", "Question/Answer translations, one row per part"),
    "qa_counts": ("qa_counts.parquet", "QA instances per task, target and outcome"),
    "clip_scores": ("clip_score/data/*.parquet", "CLIPScore of every caption and kept translation"),
    "benchmark_pairs_scored": ("benchmarks/*/clip_score/data/*.parquet", "every benchmark pair (original and kept "
                               "translation) with its CLIPScore, RefCLIPScore and judgement columns; ids <set>/…"),
    "benchmark_translations": ("benchmarks/*/translations.parquet", "the chosen translation (or the reason for none) "
                               "of every benchmark text and reference per target"),
    "benchmark_translation_candidates": ("benchmarks/*/candidates.parquet", "every beam candidate with LID and QE"),
    "rated_pairs": ("rated_pairs.parquet", "image-caption pairs with their human ratings and split (VICR), and "
                    "their kept translations (ids <set>/<id>@<target>, rating and split of the pair translated); "
                    "what `xmdata train clipscore` trains and evaluates on"),
    "benchmark_results": ("benchmark_results.parquet", "each set's metric (correlations, accuracies) per language, "
                          "every number of `xmdata evaluate`'s result by its path"),
    "mmmeb_queries": ("mmmeb_queries.parquet", "MMMEB queries: task, dataset, language, text/image/box, the gold "
                      "candidate, the pool (gold at gold_position) and the paper's instruction prompt"),
    "mmmeb_candidates": ("mmmeb_candidates.parquet", "MMMEB candidates: text, or image (and crop box), and prompt"),
    "mmmeb_tasks": ("mmmeb_tasks.parquet", "MMMEB groups (task x dataset x language): built or missing, pool sizes"),
    "mmmeb_results": ("mmmeb_results.parquet", "MMMEB P@1 per system and group, McNemar p against the first system"),
}
EXTRA_REJECTS = {"translation_selection": "translation_rejects.parquet", "qa_extraction": "qa_rejects.parquet"}
PLOTS = ["selection_map.png", "qe_histogram.png"]
REPORTS = ["summary.json", "translation_report.json", "qa_report.json", "mmmeb_report.json"]


def sorted_by_values(table: pa.Table) -> pa.Table:
    """Rows in ascending order of their scalar columns, left to right: a total order of the values."""
    keys = [(f.name, "ascending", "at_end") for f in table.schema
            if pa.types.is_string(f.type) or pa.types.is_integer(f.type) or pa.types.is_floating(f.type)
            or pa.types.is_boolean(f.type) or pa.types.is_large_string(f.type)]
    if table.num_rows < 2 or not keys:
        return table
    table = table.combine_chunks()
    return table.take(pc.sort_indices(table, sort_keys=keys))


def _read(paths: list[str]) -> pa.Table:
    tables = [storage.read_parquet(p) for p in paths]
    return pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]


def gather_tables(work: str, release: str) -> dict[str, str]:
    """{release name: what it is} for every table the build made, written under RELEASE/data/."""
    published = {}
    for name, (pattern, description) in TABLES.items():
        paths = storage.glob(storage.join(work, pattern))
        if paths:
            write_parquet_atomic(sorted_by_values(_read(paths)), os.path.join(release, "data", f"{name}.parquet"))
            published[name] = description
    return published


def gather_rejects(work: str, release: str, stages: list[str]) -> list[str]:
    """RELEASE/rejects/<stage>.parquet for every stage of the build, empty ones included (a zero
    is a fact too), and the rejects of translation selection and QA extraction. A pool's engines run
    their stages in engines/<name>/ (tasks/translation/pool.py): one table a stage still, each row
    with the `engine` that refused it."""
    engines = pool_engines(work)
    sources: dict[str, list[tuple[str, str | None]]] = {}
    for stage in stages:
        name, engine = published_stage(stage), engines.get(stage.rpartition("/")[0])
        paths = storage.glob(storage.join(work, stage, "rejects", "*.parquet"))
        sources.setdefault(name, []).extend((path, engine) for path in paths)
    sources |= {s: [(storage.join(work, f), None)] for s, f in EXTRA_REJECTS.items()
                if storage.exists(storage.join(work, f))}
    for stage, paths in sources.items():
        if paths:
            tables = [_with_engine(storage.read_parquet(path), engine) for path, engine in paths]
            table = pa.concat_tables(tables, promote_options="permissive") if len(tables) > 1 else tables[0]
            write_parquet_atomic(sorted_by_values(table), os.path.join(release, "rejects", f"{stage}.parquet"))
    return [s for s, paths in sources.items() if paths]


def published_stage(stage: str) -> str:
    """The release's name of a build stage: a pool's engines/<name>/translate is `translate`."""
    return stage.rpartition("/")[2] if stage.startswith(ENGINES_FOLDER + "/") else stage


def pool_engines(work: str) -> dict[str, str]:
    """{engines/<name>: backend:model} of the pools WORK built (translate.json's and translate_qa.json's
    `engines`); empty without a pool."""
    engines = {}
    for name in ("translate.json", "translate_qa.json"):
        path = storage.join(work, name)
        if storage.exists(path):
            engines |= {e["folder"]: e["engine"] for e in json.loads(storage.read_text(path)).get("engines", [])}
    return engines


def _with_engine(table: pa.Table, engine: str | None) -> pa.Table:
    return table if engine is None else table.append_column(ENGINE_FIELD, pa.array([engine] * table.num_rows,
                                                                                   pa.string()))


def copy_files(work: str, release: str) -> list[str]:
    """Plots to RELEASE/plots/ and the build's reports to RELEASE/reports/, byte for byte."""
    copied = []
    for folder, names in (("plots", PLOTS), ("reports", REPORTS)):
        for name in names:
            source = storage.join(work, name)
            if storage.exists(source):
                replace_atomically(os.path.join(release, folder, name),
                                   lambda tmp, data=storage.read_bytes(source): open(tmp, "wb").write(data))
                copied.append(f"{folder}/{name}")
    return copied
