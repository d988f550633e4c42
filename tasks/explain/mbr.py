"""What an MBR selection decided for a text (mbr_decisions.parquet, tasks/translation/mbr.py): the
winner's expected utility and the runner-up's, and the candidate QE reranking would have chosen."""
from __future__ import annotations

import polars as pl

from .folders import Folders
from .lookup import find_rows
from .trace import Step


def mbr_decisions(folders: Folders, text_id: str) -> pl.DataFrame | None:
    paths = folders.table_paths("mbr_decisions")
    return find_rows(paths, "id", text_id) if paths else None


def add_mbr(step: Step, decisions: pl.DataFrame | None, section: dict | None, target: str, column: str,
            element: int | None) -> None:
    """STEP (a select_translations step) with what MBR decided for its unit, per segment."""
    if decisions is None or not section or not decisions.height:
        return
    mine = decisions.filter((pl.col("target_language") == target) & (pl.col("column") == column)
                            & (pl.col("element").is_null() if element is None else pl.col("element") == element))
    said = []
    for d in mine.sort("segment").to_dicts():
        if d["expected_utility"] is None:
            said.append({"segment": d["segment"], "winner": f"#{d['beam_rank']}", "expected_utility": None,
                         "why": "the one candidate that passed: taken, no pseudo-reference"})
            continue
        said.append({"segment": d["segment"], "winner": _named(d["engine"], d["beam_rank"]),
                     "expected_utility": round(d["expected_utility"], 6),
                     "runner_up": None if d["runner_up_beam_rank"] is None else _named(
                         d["runner_up_engine"], d["runner_up_beam_rank"]),
                     "runner_up_utility": None if d["runner_up_utility"] is None else round(d["runner_up_utility"], 6),
                     "pseudo_references": d["pseudo_references"], "qe_would_choose": _named(d["qe_engine"],
                                                                                            d["qe_beam_rank"])})
    winners = {(d["segment"], d["engine"], d["beam_rank"]): d["expected_utility"] for d in mine.to_dicts()}
    for c in step.candidates:  # the verdicts are QE's rule: say which one MBR took
        c["verdict"] = c["verdict"].replace("chosen: ", "QE reranking's choice: ")
        key = (c.get("segment") or 0, c.get("engine"), c["beam_rank"])
        if key in winners or (key[0], None, key[2]) in winners:
            utility = winners.get(key, winners.get((key[0], None, key[2])))
            c["verdict"] = ("MBR's choice" + ("" if utility is None else f" (expected utility {utility:.6f})")
                            + f"; QE's rule: {c['verdict']}")
    if said:
        step.params = {**(step.params or {}), "select": section["select"], "mbr_metric": section["metric"],
                       **({"mbr_top_k": section["top_k"]} if section.get("top_k") else {})}
        step.values = {**step.values, "mbr": said if len(said) > 1 else said[0],
}


def _named(engine: str | None, rank: int) -> str:
    return f"#{rank}" if engine is None or ":" not in engine else f"{engine} #{rank}"
