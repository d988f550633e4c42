"""A row's clean-set step (`xmdata dedup`, `xmdata contamination`, a release's dedup:/contamination:):
refused or kept, and every match that names it — what it matched (id, source, method, score and the
raw measure), or, for a kept representative, the rows refused as its near-duplicates."""
from __future__ import annotations

from .folders import Folders
from .lookup import find_rejects, find_rows, stage_params, strip
from .trace import Step

# Where clean refusals are: a release's per-table stages, a command's decision and signature stages.
STAGES = ("clean_images", "clean_captions", "dedup_decision", "contamination_decision", "clean_signatures")
MATCH_COLUMNS = ("id", "match_id", "match_source", "method", "score", "measure", "measure_unit", "check", "table")


def clean_steps(folders: Folders, row_id: str) -> list[Step]:
    paths = folders.table_paths("clean_matches") + folders.table_paths("matches")
    rejects = [r for stage in STAGES for r in find_rejects(folders, stage, row_id)]
    if not paths and not rejects:
        return []  # no clean check in this build
    named = [strip(r) for r in find_rows(paths, "id", row_id).to_dicts()]
    naming = [strip(r) for r in find_rows(paths, "match_id", row_id).to_dicts()]
    if not (named or naming or rejects):
        return [Step("clean", "kept", reason="no match", params=_params(folders))]
    step = Step("clean", "rejected" if rejects else "kept", params=_params(folders))
    if rejects:
        step.reason = ", ".join(f"{r['reason']} ({r['value']})" if r["value"] else r["reason"] for r in rejects)
    step.values = {"matches": [{k: m[k] for k in MATCH_COLUMNS if k in m} for m in named]}
    if naming:
        step.values["matched_by"] = [{k: m[k] for k in MATCH_COLUMNS if k in m} for m in naming]
    return [step]


def _params(folders: Folders) -> dict | None:
    return stage_params(folders, "dedup") or stage_params(folders, "contamination")
