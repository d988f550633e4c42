"""Finding one id in a stage's files (a polars scan with a filter: only the matching rows are read),
its shard's completion record, and the params and models the stage ran with."""
from __future__ import annotations

import glob
import json
import os

import polars as pl
import yaml

from .folders import Folders

# stage: (release-config section, the part of it that is this stage's, model roles in manifest.json)
STAGES = {
    "language_id": ("language_id", None, ["language_id.lid_model"]),
    "geocode": ("image_selection", None, []),
    "image_selection": ("image_selection", None, []),
    "translate": ("translation", "translator", ["translation.translator"]),
    "candidate_lid": ("translation", "filters", ["translation.filters.lid_model"]),
    "candidate_qe": ("translation", "filters", ["translation.filters.qe_model"]),
    "translate_qa": ("qa_translation", "translator", ["qa_translation.translator"]),
    "qa_candidate_lid": ("qa_translation", "filters", ["qa_translation.filters.lid_model"]),
    "qa_candidate_qe": ("qa_translation", "filters", ["qa_translation.filters.qe_model"]),
    "clip_score": ("scoring", None, ["scoring.clip_model"]),
    "dedup": ("dedup", None, []),
    "contamination": ("contamination", None, []),
}
# what a command's own --out folder keeps of its params and resolved models
WORK_FILES = {"translation": "translate.json", "qa_translation": "translate_qa.json"}
WORK_MODELS = {"translate": "translator", "candidate_lid": "lid_model", "candidate_qe": "qe_model",
               "translate_qa": "translator", "qa_candidate_lid": "lid_model", "qa_candidate_qe": "qe_model"}


def find_rows(paths: list[str], column: str, value: str, columns: list[str] | None = None) -> pl.DataFrame:
    """The rows of PATHS whose COLUMN is VALUE, with `_file`: the file (shard) each came from. One scan
    over every shard (row groups skipped by their statistics), else, where the shards' schemas differ
    (an all-null column typed otherwise), one scan per shard."""
    if not paths:
        return pl.DataFrame()
    try:
        scan = pl.scan_parquet(paths, include_file_paths="_file", glob=False)
        schema = scan.collect_schema()
        if column not in schema:
            return pl.DataFrame()
        keep = [c for c in (columns or schema.names()) if c in schema and c != "_file"] + ["_file"]
        return scan.filter(pl.col(column) == value).select(keep).collect()
    except pl.exceptions.PolarsError:
        return find_rows_per_file(paths, column, value, columns)


def find_rows_per_file(paths: list[str], column: str, value: str, columns: list[str] | None) -> pl.DataFrame:
    frames = []
    for path in paths:
        scan = pl.scan_parquet(path, glob=False)
        schema = scan.collect_schema()
        if column not in schema:
            continue
        keep = [c for c in (columns or schema.names()) if c in schema]
        found = scan.filter(pl.col(column) == value).select(keep).collect()
        if found.height:
            frames.append(found.with_columns(_file=pl.lit(path)))
    return pl.concat(frames, how="diagonal_relaxed") if frames else pl.DataFrame()


def find_rejects(folders: Folders, stage: str, row_id: str) -> list[dict]:
    found = find_rows(folders.rejects_paths(stage), "row_id", row_id, ["stage", "reason", "row_id", "value"])
    return [strip(r) for r in found.to_dicts()]


def shard_record_of(folders: Folders, stage: str, row_id: str) -> dict | None:
    """The record of the shard of STAGE that holds ROW_ID (only its id column is read)."""
    if not folders.work:
        return None
    found = find_rows(sorted(glob.glob(os.path.join(glob.escape(folders.work), stage, "data", "*.parquet"))), "id", row_id, ["id"])
    return shard_record(found["_file"][0]) if found.height else None


def memo_use_of(folders: Folders, stage: str, record: dict | None) -> dict | None:
    """What the row's shard took from the memo of model work (`<stage>/_memo/<shard>.json`, beside its
    record); None for a build without one (made before the memo, or a release without its build)."""
    if not folders.work or not record:
        return None
    try:
        with open(os.path.join(folders.work, stage, "_memo", f"{record['shard']}.json"), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, KeyError):
        return None


def strip(row: dict) -> dict:
    return {k: v for k, v in row.items() if k != "_file"}


def shard_record(data_file: str) -> dict | None:
    """The completion record beside a stage's shard (`<stage>/_done/shard-NNNNN.json`): what makes
    it finished, with the params hash and code version it was made with."""
    folder, name = os.path.split(data_file)
    if os.path.basename(folder) != "data":
        return None  # a published or gathered table, not a shard
    path = os.path.join(os.path.dirname(folder), "_done", name.replace(".parquet", ".json"))
    if not os.path.exists(path):
        return None
    record = json.load(open(path, encoding="utf-8"))
    return {k: record.get(k) for k in ("shard", "params_hash", "code_version")}


def stage_params(folders: Folders, stage: str) -> dict | None:
    """The stage's params: its section of the release config as written, else the params the
    command's own folder kept (translate.json, translate_qa.json)."""
    if stage not in STAGES:
        return {"shards": config(folders).get("shards")} if folders.manifest else None
    section, part, _ = STAGES[stage]
    params = config(folders).get(section) if folders.manifest else None
    if params is None and section in WORK_FILES:
        params = (folders.work_json(WORK_FILES[section]) or {}).get("params")
    if params is None:
        return None
    if part == "translator":
        return {k: v for k, v in params.items() if k not in ("filters", "input")}
    if part == "filters":
        return params.get("filters") or {}
    return {k: v for k, v in params.items() if k not in ("input", "images")}  # inputs: the manifest's


def stage_models(folders: Folders, stage: str) -> list[dict] | None:
    """The models of the stage: as manifest.json fingerprints them, else as the command resolved them."""
    if stage not in STAGES:
        return None
    section, _, roles = STAGES[stage]
    if folders.manifest:
        # a pool's engines are translation.translator.0, .1, …
        return [m for m in folders.manifest.get("models", []) if m.get("role") in roles
                or str(m.get("role")).rpartition(".")[0] in roles] or None
    if section in WORK_FILES and stage in WORK_MODELS:
        spec = (folders.work_json(WORK_FILES[section]) or {}).get(WORK_MODELS[stage])
        return (spec if isinstance(spec, list) else [spec]) if spec else None  # a list: a pool's engines
    return None


def config(folders: Folders) -> dict:
    return yaml.safe_load(folders.manifest.get("config", {}).get("text") or "") or {}
