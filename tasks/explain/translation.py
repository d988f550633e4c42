"""A text's translations: every beam candidate per target with its LID and QE scores, which one the
selection rule (tasks/translation/select.py, rerun here on this text's candidates alone) chose and
why each other one lost; in a pool, the chosen candidate's engine and each other engine's best."""
from __future__ import annotations

import polars as pl

from xmdata.tasks.decisions import DECISION_TOLERANCE
from xmdata.tasks.translation.options import FilterOptions
from xmdata.tasks.translation.select import choose_per_segment

from .folders import Folders
from .llm_said import llm_values
from xmdata.runtime.memo import UnitMemo
from xmdata.tasks.translation.params import TranslateParams

from .mbr import add_mbr, mbr_decisions
from .lookup import find_rejects, find_rows, memo_use_of, shard_record_of, stage_models, stage_params
from .steps import rows_of
from .trace import Step

SHOWN = ["segment", "engine", "beam_rank", "candidate", "status", "lid_label", "lid_label_raw", "lid_prob", "lid_match",
         "qe_score"]
CHOSEN = ["text", "beam_rank", "lid_label", "lid_prob", "qe_score", "qe_quartile", "candidates", "lid_passed"]


def translation_steps(folders: Folders, text_id: str, only_target: str | None = None) -> list[Step]:
    """translate, candidate_lid, candidate_qe (per target counts) and one select_translations step per target."""
    paths = folders.table_paths("candidates")
    refused = find_rejects(folders, "translate", text_id)
    if not paths and not refused:
        return []
    candidates = find_rows(paths, "id", text_id).drop("_file", strict=False)
    if only_target and candidates.height:
        candidates = candidates.filter(pl.col("target_language") == only_target)
    made = candidates.filter(pl.col("status") == "ok").height if candidates.height else 0
    runs = engine_runs_of(folders)  # a pool's engines, each with its own stage folders
    steps = [Step("translate", "kept" if made else "rejected" if refused or candidates.height else "absent",
                  reason=", ".join(sorted({r["reason"] for r in refused} | (set(candidates["status"]) - {"ok"}
                                          if candidates.height else set()))) or None,
                  params=stage_params(folders, "translate"), model=stage_models(folders, "translate"),
                  record=stage_record(folders, "translate", text_id, runs))]
    source = (steps[0].params or {}).get("source") or TranslateParams.model_fields["source"].default
    llm = llm_values(steps[0].model, refused, candidates["source_text"][0] if candidates.height else None, source,
                     candidates["target_language"].unique(maintain_order=True).to_list() if candidates.height else [])
    steps[0].values.update(llm)  # an llm's prompt and refused raw replies (llm_said.py)
    if not made:
        return steps
    by_target = candidates.group_by("target_language", maintain_order=True)
    steps[0].values = {"candidates": {t: g.height for (t,), g in by_target}, **llm}
    searched = candidates.filter(pl.col("status").is_in(["ok", "empty_output"])).unique(
        ["engine", "target_language", "source_text"] if runs else ["target_language", "source_text"],
        maintain_order=True)
    if said := memo_said(folders, "translate", steps[0].record, runs, "beam_candidates", searched,
                         lambda r, run: [r["source_text"], run["source"] if run else source,
                                         run["codes"][r["target_language"]] if run else r["target_language"]]):
        steps[0].values["model results"] = said
    report = folders.report("translation_report.json") or {}
    thresholds = report.get("thresholds") or {}
    engines = pool_engines(report, candidates)
    default_lid = FilterOptions.model_fields["min_lid_prob"].default  # a run without its report: the default
    min_lid_prob, min_qe = thresholds.get("min_lid_prob", default_lid), thresholds.get("min_qe")
    lid_ok = candidates.filter((pl.col("status") == "ok") & pl.col("lid_match").fill_null(False)
                               & (pl.col("lid_prob") >= min_lid_prob))
    steps.append(Step("candidate_lid", "kept", values={"in the target language": {
        t: f"{lid_ok.filter(pl.col('target_language') == t).height} of {g.height}" for (t,), g in by_target}},
        params=stage_params(folders, "candidate_lid"), model=stage_models(folders, "candidate_lid"),
        record=stage_record(folders, "candidate_lid", text_id, runs)))
    steps.append(Step("candidate_qe", "kept", values={"qe_score range": {
        t: [g["qe_score"].min(), g["qe_score"].max()] if g["qe_score"].is_not_null().any() else "none scored"
        for (t,), g in by_target}},
        params=stage_params(folders, "candidate_qe"), model=stage_models(folders, "candidate_qe"),
        record=stage_record(folders, "candidate_qe", text_id, runs)))
    pairs = candidates.filter(pl.col("lid_match").fill_null(False)).unique(
        ["engine", "source_text", "candidate"] if runs else ["source_text", "candidate"], maintain_order=True)
    if said := memo_said(folders, "candidate_qe", steps[-1].record, runs, "cometkiwi", pairs,
                         lambda r, run: [r["source_text"], r["candidate"]]):
        steps[-1].values["model results"] = said
    units = find_rows(folders.table_paths("translations"), "id", text_id)
    decisions = mbr_decisions(folders, text_id) if report.get("mbr") else None
    several = candidates.select("column", "element").unique().height > 1  # caption + refs, list elements
    for (target, column, element), group in candidates.group_by(["target_language", "column", "element"],
                                                               maintain_order=True):
        name = f"select_translations -> {target}" + (
            f": {column}" + ("" if element is None else f"[{element}]") if several else "")
        steps.append(selection_step(name, group, unit_row(units, target, column, element), min_lid_prob, min_qe,
                                    engines))
        add_mbr(steps[-1], decisions, report.get("mbr"), target, column, element)
    return steps


def engine_runs_of(folders: Folders, settings: str = "translate.json") -> dict[str, dict] | None:
    """A pool's engines as its build recorded them (SETTINGS' `engines`: translate.json, translate_qa.json):
    label -> its folder, its source code and {project code: its code}; None for a one-engine build or
    without the work folder."""
    recorded = (folders.work_json(settings) or {}).get("engines") if folders.work else None
    if not recorded:
        return None
    return {e["engine"]: {"folder": e["folder"], "source": e["source"],
                          "codes": {project: code for code, project in e["targets"].items()}} for e in recorded}


def stage_record(folders: Folders, stage: str, text_id: str, runs: dict | None) -> dict | None:
    """The shard record of STAGE holding TEXT_ID; in a pool, each engine's (engine -> record), from its
    own folder (engines/<name>/<stage>)."""
    if not runs:
        return shard_record_of(folders, stage, text_id)
    records = {label: shard_record_of(folders, f"{run['folder']}/{stage}", text_id) for label, run in runs.items()}
    return {label: record for label, record in records.items() if record} or None


def memo_said(folders: Folders, stage: str, record: dict | None, runs: dict | None, kind: str,
              rows: pl.DataFrame, model_input) -> str | dict | None:
    """`reused`'s line for ROWS (MODEL_INPUT(row, run) is the memo's input of one); in a pool, one a
    engine, read from the engine's own memo lines (engines/<name>/<stage>/_memo/)."""
    if not runs:
        return reused(memo_use_of(folders, stage, record), kind, [model_input(r, None) for r in rows.to_dicts()])
    said = {}
    for label, run in runs.items():
        own = rows.filter(pl.col("engine") == label).to_dicts()
        use = memo_use_of(folders, f"{run['folder']}/{stage}", (record or {}).get(label))
        if line := reused(use, kind, [model_input(r, run) for r in own]):
            said[label] = line
    return said or None


def pool_engines(report: dict, candidates: pl.DataFrame) -> list[str] | None:
    """A pool's engines in its order (the report lists them so, per target), else as the candidates
    name them; None for a one-engine build."""
    for target in (report.get("targets") or {}).values():
        if target.get("engines"):
            return list(target["engines"])
    named = candidates["engine"].drop_nulls().unique().sort().to_list() if "engine" in candidates.columns else []
    return named if len(named) > 1 else None


def reused(use: dict | None, kind: str, inputs: list) -> str | None:
    """Whether this text's model results came from the memo in the build (runtime/memo.py), or None
    when the build did not say (made before the memo)."""
    if use is None or not inputs:
        return None
    if use.get("memo") is None:
        return f"{len(inputs)} computed by this build (the memo was off)"
    served = set(use.get("served", {}).get(kind, ()))
    hits = sum(UnitMemo.key(list(x)) in served for x in inputs)
    return (f"{hits} of {len(inputs)} from the memo (computed by an earlier build, the same bytes), "
            f"{len(inputs) - hits} computed by this build")


def unit_row(units: pl.DataFrame, target: str, column: str, element: int | None) -> dict | None:
    """The selection's row (translations table) of one unit: chosen text, or the reason for none."""
    if not units.height:
        return None
    same = units.filter((pl.col("target_language") == target) & (pl.col("column") == column)
                        & (pl.col("element").is_null() if element is None else pl.col("element") == element))
    return rows_of(same)[0] if same.height else None


def selection_step(name: str, candidates: pl.DataFrame, row: dict | None, min_lid_prob: float,
                   min_qe: float | None, engines: list[str] | None = None) -> Step:
    chosen = choose_per_segment(candidates, min_lid_prob, min_qe, engines)
    step = Step(name, "absent",
                params={"min_lid_prob": min_lid_prob, "min_qe": min_qe, "tolerance": DECISION_TOLERANCE})
    if row:
        step.outcome = "kept" if row["status"] == "ok" else "rejected"
        step.reason = row["reason"]
        shown = CHOSEN if row["status"] == "ok" else ["candidates", "lid_passed"] + (
            ["text", "qe_score"] if row["reason"] == "below_min_qe" else [])
        step.values = {k: row[k] for k in shown if k in row}
    winners = {(r["column"], r["element"], r["segment"]): r for r in chosen.to_dicts()}
    if engines:  # a pool: the chosen candidate's engine, and each other engine's best
        if row and row["status"] == "ok":
            step.values["engine"] = "+".join(sorted({w["engine"] for w in winners.values()}))
        step.values["best of each other engine"] = other_engines_best(candidates, winners, engines, min_lid_prob)
    order = ["column", "element", "segment"] + (["engine"] if "engine" in candidates.columns else []) + ["beam_rank"]
    for r in candidates.sort(order, nulls_last=False).to_dicts():
        verdict = candidate_verdict(r, winners[(r["column"], r["element"], r["segment"])], min_lid_prob, min_qe)
        step.candidates.append({**{k: r[k] for k in SHOWN if k in r}, "verdict": verdict})
    return step


def other_engines_best(candidates: pl.DataFrame, winners: dict, engines: list[str], min_lid_prob: float) -> dict:
    """Per engine that did not write the chosen candidate: its best candidate by the selection's rule
    (the rule run on its candidates alone), with its QE, or why it has none."""
    chosen_engines = {w["engine"] for w in winners.values()}
    best = {}
    for engine in engines:
        if engine in chosen_engines:
            continue
        own = candidates.filter(pl.col("engine") == engine)
        if not own.height:
            best[engine] = "no candidate (the target was left to the other engines)"
            continue
        top = choose_per_segment(own, min_lid_prob, None).row(0, named=True)
        best[engine] = ({"candidate": top["candidate"], "beam_rank": top["beam_rank"], "qe_score": top["qe_score"]}
                        if top["lid_passed"] else "no candidate passed language ID")
    return best


def candidate_verdict(c: dict, best: dict, min_lid_prob: float, min_qe: float | None) -> str:
    """The rule of select.choose_per_segment, said for one candidate."""
    if c["status"] != "ok":
        return f"no candidate: {c['status']}"
    if not c["lid_match"]:
        return f"LID says {c.get('lid_label_raw') or c['lid_label']}, not the target"
    if c["lid_prob"] is None:
        return "no LID probability"
    if c["lid_prob"] < min_lid_prob:
        return f"lid_prob {c['lid_prob']:.4f} < min_lid_prob {min_lid_prob}"
    if c["qe_score"] is None:
        return "no QE score"
    if c["beam_rank"] == best["beam_rank"] and c.get("engine") == best.get("engine"):
        if best["reason"] == "below_min_qe":
            return f"best QE of the {best['lid_passed']} that passed LID, but below min_qe {min_qe}: none kept"
        return f"chosen: best QE of the {best['lid_passed']} that passed LID"
    gap = best["qe_score"] - c["qe_score"]
    if gap <= DECISION_TOLERANCE:
        if c.get("engine") != best.get("engine"):
            return f"QE ties the chosen (within {DECISION_TOLERANCE}): its engine {best['engine']} is listed first"
        return f"QE ties the chosen (within {DECISION_TOLERANCE}): beam rank {best['beam_rank']} is better"
    return f"QE {c['qe_score']:.6f} below the chosen {best['qe_score']:.6f}"
