"""Question/Answer concatenated translation (xVLM2Vec): each MMEB-style instance is translated as
`Question: <query> Answer: <positive> Answer: <negative>`, split back on the target's label words,
and kept as independent query and positive pairs; an instance whose parts cannot be recovered is
refused with its reason. Plain generation by default; beam candidates + LID + QE on request.
"""
from __future__ import annotations

import dataclasses

import pyarrow as pa
from prefect import flow
from prefect.artifacts import create_table_artifact

from xmdata.models.registry import get_model
from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic
from xmdata.models.registry import translator_languages
from xmdata.runtime.parquet_shards import read_parquet_shards
from xmdata.schemas.translation import QA_ENGINE_CANDIDATES
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.tasks.translation.candidate_scores import candidate_lid_stage, candidate_qe_stage
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.qa.input import passthrough_columns, read_qa_input, select_instances
from xmdata.tasks.qa.labels import load_label_table, resolve_labels
from xmdata.tasks.qa.outputs import write_qa_outputs
from xmdata.tasks.qa.translate import translate_qa_stage
from xmdata.tasks.translation.languages import lid_labels_for
from xmdata.tasks.translation.outputs import pooled_shards, write_pooled
from xmdata.tasks.translation.pool import engine_runs
from xmdata.tasks.stage_params import DEFAULT_SHARDS, ShardCount

from .finish import finish_build
from .translate import check_models, engine_record
from xmdata.tasks.translation.params import TranslateQaParams


def preflight_qa(source: str | pa.Table, params: TranslateQaParams) -> pa.Table:
    """Everything refusable before weights load; returns the conformed input."""
    table = read_qa_input(source)
    if params.filters:
        for run in engine_runs(params):  # a bad --lid-accept, with each engine's codes
            lid_labels_for(run.params.targets, run.params.translator.backend, run.params.filters.lid_accept)
    check_models(params)
    return table


def translate_qa_rows(source: str | pa.Table, out: str, shards: int, params: TranslateQaParams,
                      models_checked: bool = False) -> tuple[list[StageReport], dict, dict]:
    """Run the QA translation into OUT; filters=None is plain extraction, FilterOptions adds LID + QE.
    The models are checked here unless the caller did (`models_checked`). Each engine runs its own
    stages (a one-engine build in OUT, as before; a pool's engines in OUT/engines/<name>/, as
    translate's: tasks/translation/pool.py); qa_candidates.parquet holds them all, and selection
    chooses across them. Returns (stage reports, distributions for the summary, the QA report)."""
    table = read_qa_input(source)
    if not models_checked:
        check_models(params)
    filters = params.filters
    runs = engine_runs(params, translator_languages if params.is_pool else None)
    selected, selection = select_instances(table, params.exclude_tasks, params.per_task)
    ingested = ingest(selected, "qa_instances", shards, out)
    reports, scored_paths, labels, translators = [ingested], [], {}, []
    for run in runs:
        root = storage.join(out, run.folder) if run.folder else out
        engine_labels, stages = qa_engine_stages(run, root, ingested.data_paths)
        for report in stages:  # a pool's stages are named by their folder
            reports.append(dataclasses.replace(report, stage=f"{run.folder}/{report.stage}") if run.folder else report)
        scored_paths.append(stages[-1].data_paths)
        for target, entry in engine_labels.items():  # a target's words: its first engine's
            labels.setdefault(run.to_project[target], entry)
        translators.append(run.params.translator.spec().to_dict())
    labels = {t: labels[t] for t in params.targets}
    if params.is_pool:
        write_json_atomic({"labels": labels}, storage.join(out, "qa_labels.json"))
    write_pooled(storage.join(out, "qa_candidates.parquet"), QA_ENGINE_CANDIDATES.schema,
                 pooled_shards(scored_paths, runs, ["id", "target_language", "engine_rank"]))
    write_json_atomic({"params": params.model_dump(mode="json"), "labels": labels,
                       "translator": translators if params.is_pool else translators[0],
                       "lid_model": filters.lid_spec().to_dict() if filters else None,
                       "qe_model": filters.qe_spec().to_dict() if filters else None,
                       **({"engines": [engine_record(run) for run in runs]} if params.is_pool else {})},
                      storage.join(out, "translate_qa.json"))  # what the run was, for a reader (nothing reads it back)
    candidates = read_parquet_shards(storage.join(out, "qa_candidates.parquet"))
    report = write_qa_outputs(out, candidates, params, labels, selection, passthrough_columns(selected))
    derived = sorted(t for t, entry in labels.items() if entry["source"] != "data/qa_labels.json")
    distributions = {"QA instances kept per target": report["kept_per_target"],
                     "QA input rows left out": {
                         "excluded task": sum(s["excluded"] for s in selection.values()),
                         "over per-task cap": sum(s["over_cap"] for s in selection.values())}}
    if derived:
        distributions["QA label words derived with the model"] = {t: " / ".join(
            labels[t]["question"][:1] + labels[t]["answer"][:1]) or "failed" for t in derived}
    return reports, distributions, report


def qa_engine_stages(run, root: str, instances: list[str]) -> tuple[dict, list[StageReport]]:
    """One engine's translate_qa (and, when scored, LID and COMETKiwi) stages in ROOT, in its backend's
    codes; its label words (keyed by those codes) are looked up under the project's (data/qa_labels.json)
    and derived, once, with its own model where the table lacks them."""
    one, spec = run.params, run.params.translator.spec()
    table = load_label_table()
    if run.folder:  # a pool: the table's entries under this engine's codes
        table = {code: table[project] for code, project in run.to_project.items() if project in table}
    labels = resolve_labels(one.targets, lambda: get_model("translator", spec), one.source, spec.name_or_path,
                            root, table)
    write_json_atomic({"labels": labels}, storage.join(root, "qa_labels.json"))
    stages = [run_stage(translate_qa_stage(one, spec, labels), instances, root)]
    if one.filters:
        accepted = lid_labels_for(one.targets, one.translator.backend, one.filters.lid_accept)
        stages.append(run_stage(candidate_lid_stage(one.filters.lid_spec(), accepted, "qa_candidate_lid"),
                                stages[-1].data_paths, root))
        stages.append(run_stage(candidate_qe_stage(one.filters.qe_spec(), "qa_candidate_qe"), stages[-1].data_paths,
                                root))
    return labels, stages


def publish_qa_report(report: dict) -> None:
    create_table_artifact(report["counts"], key="qa-translation-counts",
                          description="QA translation: instances per task x target x outcome")


@flow(name="translate-qa")
def translate_qa_flow(input_path: str, out: str, params: TranslateQaParams,
                      shards: ShardCount = DEFAULT_SHARDS, models_checked: bool = False) -> dict:
    """Translate MMEB-style instances of INPUT into every target with Question/Answer packing.

    Args:
        input_path: MMEB-style table: id, task, query, positive [, negative, image]
        out: output folder
        params: languages, translator, optional LID + COMETKiwi filters, tasks left out, per-task cap
        shards: the fewest shards the input is split into (by a hash of each row's id); more when it has
            more rows than XMDATA_SHARD_ROWS a shard
        models_checked: the caller checked the models and languages already (the command line does,
            before any server starts), so they are not checked twice

    Docs: docs/how-to/translate-qa.md; every option: docs/reference/commands.md#translate-qa.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        reports, distributions, report = translate_qa_rows(input_path, out, shards, params, models_checked)
        publish_qa_report(report)
        return finish_build(out, reports, distributions, f"QA translation of {input_path}",
                            extra_markdown="\n### QA translation\n\n" + report["markdown"])
