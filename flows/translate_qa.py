"""Question/Answer concatenated translation (xVLM2Vec): each MMEB-style instance is translated as
`Question: <query> Answer: <positive> Answer: <negative>`, split back on the target's label words,
and kept as independent query and positive pairs; an instance whose parts cannot be recovered is
refused with its reason. Plain generation by default; beam candidates + LID + QE on request.
"""
from __future__ import annotations


import pyarrow as pa
from prefect import flow
from prefect.artifacts import create_table_artifact

from xmdata.models.registry import get_model
from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic
from xmdata.runtime.parquet_shards import concat_parquet_files
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.tasks.translation.candidate_scores import candidate_lid_stage, candidate_qe_stage
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.qa.input import passthrough_columns, read_qa_input, select_instances
from xmdata.tasks.qa.labels import resolve_labels
from xmdata.tasks.qa.outputs import write_qa_outputs
from xmdata.tasks.qa.translate import translate_qa_stage
from xmdata.tasks.translation.languages import lid_labels_for
from xmdata.tasks.stage_params import DEFAULT_SHARDS, ShardCount

from .finish import finish_build
from .translate import check_models
from xmdata.tasks.translation.params import TranslateQaParams


def preflight_qa(source: str | pa.Table, params: TranslateQaParams) -> pa.Table:
    """Everything refusable before weights load; returns the conformed input."""
    table = read_qa_input(source)
    if params.filters:
        lid_labels_for(params.targets, params.translator.backend, params.filters.lid_accept)  # a bad --lid-accept
    check_models(params)
    return table


def translate_qa_rows(source: str | pa.Table, out: str, shards: int, params: TranslateQaParams,
                      models_checked: bool = False) -> tuple[list[StageReport], dict, dict]:
    """Run the QA translation into OUT; filters=None is plain extraction, FilterOptions adds LID + QE.
    The models are checked here unless the caller did (`models_checked`).
    Returns (stage reports, distributions for the summary, the QA report)."""
    table = read_qa_input(source)
    if not models_checked:
        check_models(params)
    targets, filters, spec = params.targets, params.filters, params.translator.spec()
    selected, selection = select_instances(table, params.exclude_tasks, params.per_task)
    # Label words of targets data/ lacks are derived here, once, with the run's own model.
    labels = resolve_labels(targets, lambda: get_model("translator", spec), params.source, spec.name_or_path, out)
    write_json_atomic({"labels": labels}, storage.join(out, "qa_labels.json"))
    ingested = ingest(selected, "qa_instances", shards, out)
    reports = [ingested, run_stage(translate_qa_stage(params, spec, labels), ingested.data_paths, out)]
    if filters:
        accepted = lid_labels_for(targets, params.translator.backend, filters.lid_accept)
        reports.append(run_stage(candidate_lid_stage(filters.lid_spec(), accepted, "qa_candidate_lid"),
                                 reports[-1].data_paths, out))
        reports.append(run_stage(candidate_qe_stage(filters.qe_spec(), "qa_candidate_qe"), reports[-1].data_paths, out))
    concat_parquet_files(reports[-1].data_paths, storage.join(out, "qa_candidates.parquet"))
    write_json_atomic({"params": params.model_dump(mode="json"), "labels": labels, "translator": spec.to_dict(),
                       "lid_model": filters.lid_spec().to_dict() if filters else None,
                       "qe_model": filters.qe_spec().to_dict() if filters else None},
                      storage.join(out, "translate_qa.json"))  # what the run was, for a reader (nothing reads it back)
    report = write_qa_outputs(out, reports[-1].data_paths, params, labels, selection, passthrough_columns(selected))
    derived = sorted(t for t, entry in labels.items() if entry["source"] != "data/qa_labels.json")
    distributions = {"QA instances kept per target": report["kept_per_target"],
                     "QA input rows left out": {
                         "excluded task": sum(s["excluded"] for s in selection.values()),
                         "over per-task cap": sum(s["over_cap"] for s in selection.values())}}
    if derived:
        distributions["QA label words derived with the model"] = {t: " / ".join(
            labels[t]["question"][:1] + labels[t]["answer"][:1]) or "failed" for t in derived}
    return reports, distributions, report


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
