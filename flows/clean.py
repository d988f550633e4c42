"""Clean sets: near-duplicates inside a set (`dedup`) and overlap with training data (`contamination`).

Read and check the input and every reference whole; shard the input; sign every row (hashes, MinHash,
embeddings: the stage that costs, resumable by shard); sign each table reference the same way into
OUT/references/<n>/; then match and decide in this process (cheap, no model) and write
matches.parquet, kept.parquet, rejects.parquet and report.json / report.md.
"""
from __future__ import annotations

import os

import pyarrow as pa
from prefect import flow

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic, write_parquet_atomic, \
    write_text_atomic
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.schemas import ContractError
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.build.rejects import concat_rejects
from xmdata.tasks.clean.decide import contamination_decisions, dedup_decisions
from xmdata.tasks.clean.inputs import RESOLVED, read_clean_input
from xmdata.tasks.clean.match import find_matches, thresholds
from xmdata.tasks.clean.match_record import MATCHES, matching_key, record_matches, recorded_matches
from xmdata.tasks.clean.params import CleanParams
from xmdata.tasks.clean.references import Reference, open_reference
from xmdata.tasks.clean.report import clean_report, report_markdown
from xmdata.tasks.clean.signatures import embedding_spec, signature_stage
from xmdata.tasks.stage_params import DEFAULT_SHARDS, ShardCount

from .finish import finish_build, step_report


EMBEDDING_KIND = {"images": "image", "captions": "text"}


def check_clean(input_path: str, against: list[str], params: CleanParams, mode: str
                ) -> tuple[str, pa.Table, list[Reference]]:
    """Input and references read and checked whole, before anything is written."""
    kind, table = read_clean_input(input_path)
    if mode == "contamination" and not against:
        raise ContractError("contamination needs at least one reference (--against)")
    if params.model and params.reference_model and params.model != params.reference_model:
        raise ContractError("--model and --reference-model name two models; the input is embedded once: name one")
    if kind == "captions" and params.model_backend == "copy_detection" and (params.model or params.reference_model):
        raise ContractError("--model-backend copy_detection embeds images; the input holds captions")
    if params.model_backend == "copy_detection" and params.model:
        from xmdata.models.registry import get_model

        get_model("embedder", embedding_spec(params))  # a file that is no TorchScript model: refused here
    elif params.model or params.reference_model:  # an open_clip model the scorer could not load: refused here
        from xmdata.tasks.scoring.input import check_clip_model

        check_clip_model(params.model or params.reference_model, params.pretrained)
    if mode == "dedup" and kind == "captions" and params.model and not (params.exact_text or params.minhash):
        raise ContractError("dedup of captions has no embedding tier (the cross-lingual tier is contamination's): "
                            "keep exact_text or minhash on")
    if kind == "images" and not any(p and os.path.isfile(p) for p in table.column(RESOLVED).to_pylist()):
        first = next((p for p in table.column("path").to_pylist() if p), None)
        raise ContractError(f"{input_path}: none of its {table.num_rows} images is a file"
                            + (f" (the first: {first}, read from the table's folder)" if first else " (no path given)"))
    references = [open_reference(r, kind, params.reference_model) for r in against]
    if any(r.kind == "embeddings" for r in references):
        from xmdata.tasks.clean.clip_retrieval import open_embeddings_folder
        from xmdata.tasks.clean.signatures import embedding_dim

        dim = embedding_dim(embedding_spec(params))  # a folder of another width is refused here
        for ref in references:
            if ref.kind == "embeddings":
                open_embeddings_folder(ref.folder, EMBEDDING_KIND[kind], dim)
    return kind, table, references


def gathered(report: StageReport) -> pa.Table:
    parts = [storage.read_parquet(p) for p in report.data_paths]
    return pa.concat_tables(parts, promote_options="default").sort_by("id") if parts else pa.table({"id": []})


def clean_rows(mode: str, input_path: str, against: list[str], out: str, shards: int, params: CleanParams,
               checked: tuple[str, pa.Table, list[Reference]] | None = None) -> tuple[list[StageReport], dict, dict]:
    """(stage reports, distributions, report) of one dedup or contamination run into OUT."""
    kind, table, references = checked or check_clean(input_path, against, params, mode)
    model = embedding_spec(params)
    ingested = ingest(table, kind, shards, out)
    signed = run_stage(signature_stage(kind, params, model), ingested.data_paths, out)
    reports = [ingested, signed]
    signed_refs, recorded_refs = [], []
    for n, ref in enumerate(references):
        if ref.kind == "embeddings":
            signed_refs.append((ref, None))
            recorded_refs.append((ref.source, ref.folder))
            continue
        root = os.path.join(out, "references", f"{n:02d}")
        ref_in = ingest(ref.table, f"reference_{ref.kind}", shards, root)
        ref_signed = run_stage(signature_stage(kind, params, model), ref_in.data_paths, root)
        signed_refs.append((ref, gathered(ref_signed)))
        recorded_refs.append((ref.source, ref_signed))
        reports += [_renamed(ref_in, f"reference_{n:02d}_ingest"), _renamed(ref_signed, f"reference_{n:02d}_signatures")]
    query = gathered(signed)
    key = matching_key(mode, kind, params, signed, recorded_refs)
    matches = recorded_matches(out, key)  # the search again only when what it searched changed
    if matches is None:
        matches = with_shown(find_matches(kind, query, signed_refs, params), kind, query, signed_refs)
        record_matches(out, key, write_parquet_atomic(matches, storage.join(out, MATCHES)))
    stage = f"{mode}_decision"
    groups = None
    if mode == "dedup":
        kept, refused, groups = dedup_decisions(query, matches, stage)
    else:
        kept, refused = contamination_decisions(query, matches, stage)
    reports.append(step_report(stage, query.num_rows, kept.num_rows, refused, out))
    kept = kept.select([c for c in table.column_names if c != RESOLVED])  # the input's columns, as written
    all_rejects = concat_rejects([_stage_rejects(out, r.stage) for r in (ingested, signed)] + [refused])
    write_parquet_atomic(kept, storage.join(out, "kept.parquet"))
    write_parquet_atomic(all_rejects, storage.join(out, "rejects.parquet"))
    report = clean_report(mode, kind, input_path, against, table.num_rows, kept.num_rows, matches, all_rejects,
                          thresholds(params), params.tiers(kind, any(r.kind == "embeddings" for r in references)), groups)
    write_json_atomic(report, storage.join(out, "report.json"))
    write_text_atomic(report_markdown(report), storage.join(out, "report.md"))
    return reports, {f"{mode}_matches": {m: v["matches"] for m, v in report["methods"].items()}}, report


SHOWN = {"images": "path", "captions": "text"}  # what a reader looks at: the image (as its table names it), the text


def with_shown(matches: pa.Table, kind: str, query: pa.Table, references: list) -> pa.Table:
    """The matches with what both sides show (`path`/`match_path` or `text`/`match_text`), so that a
    page can put a pair side by side without the input tables (a refused row is in no published table)."""
    column = SHOWN[kind]
    mine = dict(zip(query.column("id").to_pylist(), query.column(column).to_pylist()))
    theirs = {"self": mine} | {ref.source: dict(zip(table.column("id").to_pylist(), table.column(column).to_pylist()))
                               for ref, table in references if table is not None}
    shown = [mine.get(i) for i in matches.column("id").to_pylist()]
    other = [theirs.get(s, {}).get(m) for s, m in zip(matches.column("match_source").to_pylist(),
                                                      matches.column("match_id").to_pylist())]
    return matches.append_column(column, pa.array(shown, pa.string())).append_column(
        f"match_{column}", pa.array(other, pa.string()))


def _renamed(report: StageReport, name: str) -> StageReport:
    return StageReport(name, report.records, report.shards_run, report.shards_skipped, report.data_paths, report.timing)


def _stage_rejects(out: str, stage: str) -> pa.Table:
    folder = os.path.join(out, stage, "rejects")
    files = sorted(os.listdir(folder)) if os.path.isdir(folder) else []
    return concat_rejects([storage.read_parquet(os.path.join(folder, f)) for f in files if f.endswith(".parquet")])


@flow(name="dedup")
def dedup_flow(input_path: str, out: str, params: CleanParams = CleanParams(),
               shards: ShardCount = DEFAULT_SHARDS) -> dict:
    """Near-duplicates inside one images table (id, path) or captions table (id, text, language).

    Args:
        input_path: images or captions table (Parquet, CSV, JSONL)
        out: output folder (matches.parquet, kept.parquet, rejects.parquet, report.json, report.md)
        params: the tiers and their thresholds
        shards: the fewest shards the input is split into (by a hash of each row's id); more when it has
            more rows than XMDATA_SHARD_ROWS a shard

    Docs: docs/how-to/clean.md; every option: docs/reference/commands.md#dedup.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        reports, distributions, report = clean_rows("dedup", input_path, [], out, shards, params)
        return finish_build(out, reports, distributions, f"Dedup of {input_path}", report_markdown(report)) \
            | {"clean_report": report}


@flow(name="contamination")
def contamination_flow(input_path: str, against: list[str], out: str, params: CleanParams = CleanParams(),
                       shards: ShardCount = DEFAULT_SHARDS) -> dict:
    """Every row of INPUT that matches a row of a reference (image folder, table, release, embeddings folder).

    Args:
        input_path: images or captions table (Parquet, CSV, JSONL)
        against: the references
        out: output folder (matches.parquet, kept.parquet, rejects.parquet, report.json, report.md)
        params: the tiers and their thresholds
        shards: the fewest shards the input is split into (by a hash of each row's id); more when it has
            more rows than XMDATA_SHARD_ROWS a shard

    Docs: docs/how-to/clean.md; every option: docs/reference/commands.md#contamination.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        reports, distributions, report = clean_rows("contamination", input_path, against, out, shards, params)
        return finish_build(out, reports, distributions, f"Contamination of {input_path}", report_markdown(report)) \
            | {"clean_report": report}

