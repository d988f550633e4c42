"""Quality-aware translation: beam candidates -> fastText language ID -> COMETKiwi -> selection.

The recipe of the multilingual CLIPScore work: for each text, beam search (100 beams, 25 returned),
candidates in the wrong language dropped, the one COMETKiwi scores highest kept.
"""
from __future__ import annotations

import dataclasses

import pyarrow as pa
from prefect import flow
from prefect.artifacts import create_table_artifact

from xmdata.models.base import ModelSpec, resolve_local_path
from xmdata.models.ct2_convert import ensure_converted
from xmdata.models.cometkiwi import checkpoint_path
from xmdata.models.comet_ref import check_reference_based
from xmdata.models.fasttext_lid import check_fasttext_file
from xmdata.models.registry import translator_languages
from xmdata.runtime import storage
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.schemas import ContractError
from xmdata.tasks.translation.candidate_scores import candidate_lid_stage, candidate_qe_stage
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.translation.translate import translate_stage
from xmdata.tasks.translation.mbr import STORED_KEY
from xmdata.tasks.translation.mbr_options import CHRF
from xmdata.tasks.translation.mbr_utilities import build_utilities, mbr_spec
from xmdata.tasks.translation.input import read_translation_input
from xmdata.tasks.translation.languages import lid_labels_for
from xmdata.tasks.translation.pool import SOURCE_TAGGED, engine_runs
from xmdata.tasks.translation.outputs import write_candidates, write_run, write_selection
from xmdata.tasks.stage_params import DEFAULT_SHARDS, ShardCount

from .finish import finish_build
from xmdata.tasks.translation.params import TranslateParams, TranslateQaParams


def check_before_loading(translator: ModelSpec, source: str, targets: list[str], *specs: ModelSpec) -> None:
    """Missing model paths and unsupported languages stop the run before any weights load."""
    for spec in (translator, *specs):
        if spec.backend == "fasttext":
            check_fasttext_file(spec)
        elif spec.backend == "cometkiwi" and spec.is_local:
            checkpoint_path(resolve_local_path(spec))  # a folder without checkpoints/model.ckpt
        elif spec.backend == "comet":  # MBR's utility: a reference-based COMET, not COMETKiwi
            check_reference_based(spec)
        elif spec.is_local:
            resolve_local_path(spec)
    if translator.backend == "llm":  # its tokenizer alone: a model without a chat template is refused here
        from xmdata.models.llm import LlmTranslator

        LlmTranslator(translator).load_tokenizer()
    if translator.option("engine") == "ctranslate2":  # conversion on first use, refused before any shard
        ensure_converted(translator, translator.option("compute_type"))
    supported = translator_languages(translator)
    asked = ([source] if translator.backend in SOURCE_TAGGED else []) + targets  # MADLAD takes no source tag
    unknown = [lang for lang in asked if lang not in supported]
    if unknown:
        raise ContractError(f"{translator.backend} model {translator.name_or_path} does not support "
                            f"{', '.join(unknown)}; supported: {', '.join(supported)}")


def check_models(params: TranslateParams | TranslateQaParams) -> None:
    """The translators (and the filters' models, when set) exist and take the run's languages; in a
    pool, each engine the languages it covers, and every target some engine (tasks/translation/pool.py)."""
    filters = params.filters
    others = (filters.lid_spec(), filters.qe_spec()) if filters else ()
    if filters and filters.uses_mbr and filters.mbr_metric != CHRF:
        others += (mbr_spec(filters),)
    if not getattr(params, "is_pool", False):
        check_before_loading(params.translator.spec(), params.source, params.targets, *others)
        return
    for run in engine_runs(params, translator_languages):  # refuses a target no engine covers
        check_before_loading(run.params.translator.spec(), run.params.source, run.params.targets, *others)


def preflight(source: str | pa.Table, params: TranslateParams) -> tuple[pa.Table, list[str]]:
    """Everything that can be refused before a model loads; returns the input and its list columns."""
    table, list_columns = read_translation_input(source, params.columns)
    for run in engine_runs(params):  # a bad --lid-accept, with each engine's codes
        lid_labels_for(run.params.targets, run.params.translator.backend, run.params.filters.lid_accept)
    check_models(params)
    return table, list_columns


def translate_texts(source: str | pa.Table, out: str, shards: int, params: TranslateParams,
                    models_checked: bool = False) -> tuple[list[StageReport], dict, dict]:
    """The build: the models are checked here unless the caller did (`models_checked`). Each engine
    runs its own translate, language-ID and COMETKiwi stages (a one-engine build in OUT, as before;
    a pool's engines in OUT/engines/<name>/); the candidates table holds them all."""
    table, list_columns = read_translation_input(source, params.columns)
    if not models_checked:
        check_models(params)
    filters = params.filters
    runs = engine_runs(params, translator_languages if params.is_pool else None)
    ingested = ingest(table, "texts", shards, out)
    reports, scored_paths, accepted, translators = [ingested], [], {}, []
    for run in runs:
        root = storage.join(out, run.folder) if run.folder else out
        one, spec = run.params, run.params.translator.spec()
        labels = lid_labels_for(one.targets, one.translator.backend, one.filters.lid_accept)
        translated = run_stage(translate_stage(one, spec), ingested.data_paths, root)
        labelled = run_stage(candidate_lid_stage(filters.lid_spec(), labels), translated.data_paths, root)
        scored = run_stage(candidate_qe_stage(filters.qe_spec()), labelled.data_paths, root)
        for report in (translated, labelled, scored):  # a pool's stages are named by their folder
            reports.append(dataclasses.replace(report, stage=f"{run.folder}/{report.stage}") if run.folder else report)
        scored_paths.append(scored.data_paths)
        accepted.update({run.to_project[code]: found for code, found in labels.items()})
        translators.append(spec.to_dict())
    write_candidates(scored_paths, out, runs)
    stored = {}
    if filters.uses_mbr:  # every (candidate, pseudo-reference) utility: selection reads them (mbr.py)
        utilities, stored[STORED_KEY] = build_utilities(scored_paths, out, runs, filters)
        reports.append(utilities)
    write_run(out, params, list_columns, accepted_lid_labels=accepted, **stored,
              translator=translators if params.is_pool else translators[0],
              lid_model=filters.lid_spec().to_dict(), qe_model=filters.qe_spec().to_dict(),
              **({"engines": [engine_record(run) for run in runs]} if params.is_pool else {}))
    selection = write_selection(out, params, list_columns)
    kept = {t: r["rows_out"] for t, r in selection["targets"].items()}
    return reports, {"translations kept per target": kept}, selection


def engine_record(run) -> dict:
    """translate.json's word on a pool's engine: its folder, codes and what it left to the others."""
    return {"engine": run.label, "folder": run.folder, "source": run.params.source,
            "targets": run.to_project, "left_to_others": list(run.left)}


@flow(name="translate")
def translate_flow(input_path: str, out: str, params: TranslateParams, shards: ShardCount = DEFAULT_SHARDS,
                   models_checked: bool = False) -> dict:
    """Translate the columns of INPUT into every target: beam candidates, language ID, COMETKiwi, selection.

    Args:
        input_path: table with id and the text columns (strings or lists of strings)
        out: output folder
        params: columns, languages, translator, language ID and COMETKiwi filters
        shards: the fewest shards the input is split into (by a hash of each row's id); more when it has
            more rows than XMDATA_SHARD_ROWS a shard
        models_checked: the caller checked the models and languages already (the command line does,
            before any server starts), so they are not checked twice

    Docs: docs/how-to/translate.md; every option: docs/reference/commands.md#translate.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        reports, distributions, selection = translate_texts(input_path, out, shards, params, models_checked)
        publish_report(selection)
        return finish_build(out, reports, distributions, f"Translation of {input_path}",
                            extra_markdown="\n### Translation\n\n" + selection["markdown"],
                            plots=(storage.join(out, "qe_histogram.png"),))


def publish_report(selection: dict) -> None:
    rows = [{"target": t, "rows_in": r["rows_in"], "kept": r["rows_out"], "acceptance": r["acceptance_rate"],
             "lid_rejected_candidates": r["candidates_lid_rejected"], "qe_mean": r["qe"]["mean"],
             "qe_bottom_quartile_mean": r["qe"]["bottom_quartile_mean"],
             "qe_top_quartile_mean": r["qe"]["top_quartile_mean"]} for t, r in selection["targets"].items()]
    create_table_artifact(rows, key="translation-report", description="Translation acceptance and QE per target")
