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

import polars as pl
import pyarrow as pa

from xmdata.tasks.translation.params import TranslateParams
from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic, write_parquet_atomic, write_text_atomic
from xmdata.schemas import ContractError
from xmdata.schemas.translation import TRANSLATIONS

from .reassemble import reassemble
from xmdata.tasks.build.rejects import concat_rejects, make_rejects
from xmdata.tasks.translation.select import near_threshold_counts, select_units
from xmdata.tasks.translation.report import report_markdown, translation_report, write_qe_histogram

CANDIDATES_FILE, SETTINGS_FILE = "candidates.parquet", "translate.json"
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
    refused = pl.from_arrow(translations).filter(pl.col("status") != "ok")
    parts = [make_rejects(STAGE, reason, group["id"].to_list(), [
        f"{c if e is None else f'{c}[{e}]'} -> {t}" for c, e, t in
        zip(group["column"], group["element"], group["target_language"])])
        for (reason,), group in refused.group_by("reason", maintain_order=True)]
    return concat_rejects(parts)


def write_selection(run_dir: str, params: TranslateParams, list_columns: list[str], out: str | None = None,
                    min_lid_prob: float | None = None, min_qe: float | None = None) -> dict:
    """Select from RUN_DIR's candidates into OUT (default RUN_DIR); thresholds default to the params'."""
    out = out or run_dir
    min_lid_prob = params.filters.min_lid_prob if min_lid_prob is None else min_lid_prob
    min_qe = params.filters.min_qe if min_qe is None else min_qe
    candidates = storage.read_parquet(storage.join(run_dir, CANDIDATES_FILE))
    units = select_units(candidates, min_lid_prob, min_qe)
    translations = units.select(TRANSLATIONS.schema.names).to_arrow().cast(TRANSLATIONS.schema)
    write_parquet_atomic(translations, storage.join(out, "translations.parquet"))
    write_parquet_atomic(reassemble(translations, params.columns, list_columns),
                         storage.join(out, "translated.parquet"))
    write_parquet_atomic(selection_rejects(translations), storage.join(out, "translation_rejects.parquet"))
    report = {"thresholds": {"min_lid_prob": min_lid_prob, "min_qe": min_qe},
              "targets": translation_report(candidates, translations),
              "near_threshold": near_threshold_counts(units)}
    write_json_atomic(report, storage.join(out, "translation_report.json"))
    write_qe_histogram(translations, storage.join(out, "qe_histogram.png"))
    markdown = report_markdown(report["targets"], "qe_histogram.png")
    write_text_atomic(markdown, storage.join(out, "translation_report.md"))
    return {**report, "markdown": markdown}
