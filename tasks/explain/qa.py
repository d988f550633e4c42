"""A QA instance's path (xVLM2Vec): ingest, the packed `Question: … Answer: …` translation per target
(with LID and QE per candidate when filtered), and extraction: the parts kept, or why none."""
from __future__ import annotations

import re

import polars as pl

from .folders import Folders
from .lookup import find_rejects, find_rows, stage_models, stage_params
from .steps import found, rows_of, stage_step
from .trace import Step, Trace
from .translation import engine_runs_of, stage_record

SHOWN = ["part", "engine", "beam_rank", "status", "candidate", "output", "lid_label", "lid_prob", "qe_score"]  # output: raw
KEPT = ["target_text", "beam_rank", "lid_label", "lid_prob", "qe_score"]


def target_of(value: str | None) -> str | None:
    """The target a QA reject names: `A-OKVQA -> de` (extraction) or `-> fr: '…'` (translation)."""
    match = re.search(r"-> ([^:\s]+)", value or "")
    return match.group(1) if match else None


def qa_trace(folders: Folders, instance_id: str) -> Trace | None:
    steps, row = [], None
    if made := stage_step(folders, "qa_instances", "qa_instances", instance_id, []):
        steps.append(made[0])
        row = made[1]
    candidates = find_rows(folders.table_paths("qa_candidates"), "id", instance_id).drop("_file", strict=False)
    refused = find_rejects(folders, "translate_qa", instance_id)
    kept = find_rows(folders.table_paths("qa_parallel"), "id", instance_id)
    extraction = find_rejects(folders, "qa_extraction", instance_id)
    if candidates.height or refused:
        made = candidates.filter(pl.col("status") == "ok").height if candidates.height else 0
        translated = Step("translate_qa", "kept" if made or kept.height
                          else "rejected", params=stage_params(folders, "translate_qa"),
                          model=stage_models(folders, "translate_qa"),
                          record=stage_record(folders, "translate_qa", instance_id,  # a pool: each engine's
                                              engine_runs_of(folders, "translate_qa.json")))
        translated.reason = ", ".join(sorted({f"{r['reason']} ({target_of(r['value'])})" for r in refused})) or None
        if candidates.height:
            translated.values = {"status": {f"{r['target_language']}/{r['part']}": r["status"]
                                            for r in candidates.unique(["target_language", "part"], keep="first",
                                                                       maintain_order=True).to_dicts()}}
        steps.append(translated)
    targets = sorted({*candidates.get_column("target_language", default=pl.Series([], dtype=pl.String)).to_list(),
                      *kept.get_column("target_language", default=pl.Series([], dtype=pl.String)).to_list(),
                      *(target_of(r["value"]) for r in extraction + refused)} - {None})
    for target in targets:
        steps.append(extraction_step(folders, target, candidates, kept, extraction))
    if not found(steps):
        return None
    return Trace("qa_instance", instance_id, row, steps)


def extraction_step(folders: Folders, target: str, candidates: pl.DataFrame, kept: pl.DataFrame,
                    extraction: list[dict]) -> Step:
    parts = rows_of(kept.filter(pl.col("target_language") == target)) if kept.height else []
    reasons = sorted({r["reason"] for r in extraction if target_of(r["value"]) == target})
    step = Step(f"select_qa -> {target}", "kept" if parts else "rejected" if reasons else "absent",
                reason=", ".join(reasons) or None, params=stage_params(folders, "qa_candidate_qe") or None)
    step.values = {p["part"]: {k: p[k] for k in KEPT if k in p} for p in parts}
    chosen = {(p["part"], p.get("beam_rank"), p.get("target_text")) for p in parts}  # the text: which engine's
    mine = candidates.filter(pl.col("target_language") == target) if candidates.height else candidates
    for c in mine.to_dicts():
        verdict = ("chosen" if (c["part"], c["beam_rank"], c["candidate"]) in chosen else
                   f"no text: {c['status']}" if c["status"] != "ok" else "not chosen")
        step.candidates.append({**{k: c[k] for k in SHOWN if k in c}, "verdict": verdict})
    return step
