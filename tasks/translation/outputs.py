"""The selection step's files, from candidates.parquet and the run's params alone (no model):

    translations.parquet          one row per id × column × element × target: chosen text or reason
    translated.parquet            the input's shape, translated: one row per id × target, all parts kept
    translation_rejects.parquet   every rejected part (stage select_translations, reason)
    translation_report.json/.md   per target: in/out, reasons, LID rejects, QE distribution, quartiles
    qe_histogram.png              QE of kept translations, one panel per target

translate.json keeps the run's TranslateParams as given (and the models as they resolved), so that
`xmdata select-translations` re-selects a finished run with other thresholds; a build selects from
the params it holds and reads nothing back.
"""
from __future__ import annotations

import json
import os
from typing import Iterable, Iterator

import polars as pl
import pyarrow as pa

from xmdata.tasks.translation.params import TranslateParams
from xmdata.runtime import storage
from xmdata.runtime.atomic import ParquetStream, local_temp_folder, write_json_atomic, write_text_atomic
from xmdata.runtime.parquet_shards import SHARD_ROWS_KEY
from xmdata.schemas import ContractError
from xmdata.schemas.tables import REJECTS_SCHEMA
from xmdata.schemas.translation import TRANSLATION_CANDIDATES, TRANSLATIONS

from .reassemble import reassemble, reassembled_schema
from xmdata.tasks.build.rejects import rejects_in_order
from xmdata.tasks.build import sorted_merge
from xmdata.tasks.translation.mbr import MbrOutputs, selection_shards, stats_markdown
from xmdata.tasks.translation.select import ORDER, shard_units
from xmdata.tasks.translation.report import ReportTally, engines_markdown, report_markdown, write_qe_histogram

CANDIDATES_FILE, SETTINGS_FILE = "candidates.parquet", "translate.json"
UNIT_COLUMNS = [c for c in TRANSLATIONS.schema.names if c != "qe_quartile"]
CANDIDATE_ORDER = ["id", "column", "element", "segment", "target_language"]  # as the translate stage sorts (translate.py)  # what the merge needs of a unit
STAGE = "select_translations"


def write_run(out: str, params: TranslateParams, list_columns: list[str], **resolved) -> None:
    """translate.json: the params, the input's list columns, and `resolved` facts (model specs, LID labels)."""
    write_json_atomic({"params": params.model_dump(mode="json"), "list_columns": list_columns, **resolved},
                      storage.join(out, SETTINGS_FILE))


def read_run(run_dir: str) -> tuple[TranslateParams, list[str]]:
    """The params and list columns of a finished `xmdata translate` run."""
    refused = ContractError(f"{run_dir}: not a translation run (needs {CANDIDATES_FILE} and {SETTINGS_FILE})")
    if not storage.exists(storage.join(run_dir, CANDIDATES_FILE)):
        raise refused
    try:
        run = json.loads(storage.read_text(storage.join(run_dir, SETTINGS_FILE)))
    except FileNotFoundError:
        raise refused from None
    if "params" not in run:
        raise ContractError(f"{run_dir}/{SETTINGS_FILE}: written by an older xmdata; translate again to re-select")
    return TranslateParams.model_validate(run["params"]), run["list_columns"]


def selection_rejects(translations: pa.Table) -> pa.Table:
    """Every refused part of TRANSLATIONS, in its order: id, and `column[element] -> target` as the value."""
    refused = pl.from_arrow(translations).filter(pl.col("status") != "ok")
    return rejects_in_order(STAGE, ((i, reason, f"{c if e is None else f'{c}[{e}]'} -> {t}") for i, c, e, t, reason in
                                    refused.select("id", "column", "element", "target_language", "reason").iter_rows()))


def pooled_shards(shard_paths: list[list[str]], runs: list, order: list[str]) -> Iterator[pl.DataFrame]:
    """Shard by shard, every engine's scored shard (RUNS: tasks/translation/pool.py, SHARD_PATHS in their
    order) with its `engine` and `engine_rank` (its place in the pool) and the targets in the run's
    codes, sorted by ORDER (rows equal on it keep their order): the candidates tables of translate and
    translate-qa alike."""
    for shards in zip(*shard_paths):
        parts = [pl.from_arrow(storage.read_parquet(path)).with_columns(
            engine=pl.lit(run.label), engine_rank=pl.lit(run.rank, pl.Int32),
            target_language=pl.col("target_language").replace_strict(run.to_project, default=None))
            for run, path in zip(runs, shards)]
        yield (pl.concat(parts).sort(order, nulls_last=False, maintain_order=True)
               if len(parts) > 1 else parts[0])
        del parts


def write_pooled(path: str, schema: pa.Schema, frames: Iterable[pl.DataFrame]) -> None:
    """PATH: FRAMES (pooled_shards) in SCHEMA, each shard its own row groups and its rows in the footer
    (a build file: the release sorts it into its own)."""
    sizes = []
    with ParquetStream(path, schema, as_written=True) as stream:
        for table in frames:
            stream.write(table.select(schema.names).to_arrow().cast(schema))
            sizes.append(table.height)
            del table
            pa.default_memory_pool().release_unused()
        stream.key_values[SHARD_ROWS_KEY] = json.dumps(sizes)


def write_candidates(shard_paths: list[list[str]], out: str, runs: list) -> None:
    """OUT/candidates.parquet: every engine's scored shards, a unit's candidates in (engine's place in
    the pool, beam rank) order."""
    write_pooled(storage.join(out, CANDIDATES_FILE), TRANSLATION_CANDIDATES.schema,
                 pooled_shards(shard_paths, runs, [*CANDIDATE_ORDER, "engine_rank", "beam_rank"]))


def write_selection(run_dir: str, params: TranslateParams, list_columns: list[str], out: str | None = None,
                    min_lid_prob: float | None = None, min_qe: float | None = None) -> dict:
    """Select from RUN_DIR's candidates into OUT (default RUN_DIR); thresholds default to the params'.

    Shard by shard (small ones together): each shard's units are chosen and counted, kept in a
    private temp folder, then merged in ORDER into the outputs, a bounded number of rows at a time.
    The whole selection holds a shard and each kept unit's QE score (for quartiles, quantiles and
    the histogram)."""
    out = out or run_dir
    min_lid_prob = params.filters.min_lid_prob if min_lid_prob is None else min_lid_prob
    min_qe = params.filters.min_qe if min_qe is None else min_qe
    engines = [engine.engine_label() for engine in params.engines]
    tally = ReportTally(engines if params.is_pool else None)
    with local_temp_folder(out) as folder, MbrOutputs(run_dir, out, params.filters) as mbr_outputs:
        unit_files = []
        for candidates, utilities in selection_shards(run_dir, CANDIDATES_FILE, params.filters.uses_mbr):
            mbr = mbr_outputs.shard(utilities)
            units = shard_units(candidates, min_lid_prob, min_qe, engines, mbr)
            mbr_outputs.add(mbr)
            tally.add(candidates, units)
            unit_files.append(os.path.join(folder, f"{len(unit_files):06d}.parquet"))
            sorted_merge.write_sorted(units.select(UNIT_COLUMNS).to_arrow(), unit_files[-1])
            del candidates, units
            pa.default_memory_pool().release_unused()
        quartiles = tally.quartiles()
        with ParquetStream(storage.join(out, "translations.parquet"), TRANSLATIONS.schema) as chosen, \
                ParquetStream(storage.join(out, "translated.parquet"),
                              reassembled_schema(params.columns, list_columns)) as translated, \
                ParquetStream(storage.join(out, "translation_rejects.parquet"), REJECTS_SCHEMA) as rejects:
            for units in sorted_merge.merge_sorted(unit_files, ORDER, group=["target_language", "id"]):
                translations = quartiles.assign(units).select(TRANSLATIONS.schema.names).to_arrow()
                chosen.write(translations)
                translated.write(reassemble(translations.cast(TRANSLATIONS.schema), params.columns, list_columns))
                rejects.write(selection_rejects(translations))
                del units, translations
                pa.default_memory_pool().release_unused()
    report = {"thresholds": {"min_lid_prob": min_lid_prob, "min_qe": min_qe},
              "targets": tally.report(quartiles), "near_threshold": dict(sorted(tally.near_threshold.items())),
              **({"mbr": section} if (section := mbr_outputs.report()) else {})}
    write_json_atomic(report, storage.join(out, "translation_report.json"))
    write_qe_histogram(quartiles.scores, storage.join(out, "qe_histogram.png"))
    markdown = report_markdown(report["targets"], "qe_histogram.png")
    if params.is_pool:
        markdown += "\n" + engines_markdown(report["targets"])
    if "mbr" in report:
        markdown += "\n" + stats_markdown(report["mbr"])
    write_text_atomic(markdown, storage.join(out, "translation_report.md"))
    return {**report, "markdown": markdown}
