"""Inference datasets re-purposed as caption-score orderings (multilingual CLIPScore, Appendix F):
XVNLI tasks 1-3 over hypotheses of the same image, MaRVL tasks 1-2 over instances of the same caption.
A tie between two scores never counts as a correct order."""
from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from xmdata.schemas.contract import ContractError, Violation
from xmdata.schemas.evaluation import labels, numbers, require_columns, row_labels

from xmdata.tasks.evaluation.accuracy import accuracy_block, group_labels

XVNLI_ORDER = {"contradiction": 0, "neutral": 1, "entailment": 2}
TRUE_LABELS, FALSE_LABELS = {"true", "1", "yes"}, {"false", "0", "no"}


def _codes(table: pa.Table, column: str, mapping: dict, source: str, id_column: str) -> np.ndarray:
    values = [str(v).strip().lower() for v in labels(table, column, source, id_column)]
    bad = np.asarray([v not in mapping for v in values])
    if bad.any():
        raise ContractError([Violation(source, column, f"{int(bad.sum())} label(s) not in "
                                      f"{sorted(mapping)}",
                                      row_labels(table, bad, id_column))])
    return np.asarray([mapping[v] for v in values])


def xvnli_accuracy(table: pa.Table, score: str, label: str = "label", image: str = "image_id",
                   language: str | None = "language", source: str = "input", id_column: str = "id") -> dict:
    """Per language. Task 1: (contradiction, entailment) pairs of one image, entailment scored higher.
    Task 2: every pair of one image with different labels, ordered contradiction < neutral < entailment.
    Task 3: every (contradiction, neutral, entailment) triple of one image in exactly that order."""
    require_columns(table, {score: "numeric", label: "label", image: "label",
                            **({language: "label"} if language else {})}, source)
    df = pl.DataFrame({"lang": group_labels(table, language, source, id_column).tolist(),
                       "image": [str(v) for v in labels(table, image, source, id_column)],
                       "label": _codes(table, label, XVNLI_ORDER, source, id_column),
                       "score": numbers(table, score, source, id_column)})
    by = [df.filter(pl.col("label") == k).drop("label") for k in range(3)]
    keys = ["lang", "image"]
    pairs = pl.concat([by[lo].join(by[hi], on=keys, suffix="_hi").with_columns(extreme=pl.lit(lo == 0 and hi == 2))
                       for lo, hi in ((0, 1), (0, 2), (1, 2))])
    triples = by[0].join(by[1], on=keys, suffix="_n").join(by[2], on=keys, suffix="_e")
    per_language = {}
    for code in sorted(df["lang"].unique().to_list()):
        p = pairs.filter(pl.col("lang") == code)
        t = triples.filter(pl.col("lang") == code)
        right = (p["score_hi"] > p["score"]).to_numpy()
        tied = (p["score_hi"] == p["score"]).to_numpy()
        extreme = p["extreme"].to_numpy()
        per_language[code] = {
            "task1": accuracy_block(right[extreme], tied[extreme]),
            "task2": accuracy_block(right, tied),
            "task3": accuracy_block(((t["score"] < t["score_n"]) & (t["score_n"] < t["score_e"])).to_numpy()),
        }
    return {"score_column": score, "per_language": per_language,
            "overall": {task: _pool([v[task] for v in per_language.values()]) for task in ("task1", "task2", "task3")}}


def _pool(blocks: list[dict]) -> dict:
    n, correct = sum(b["n"] for b in blocks), sum(b["correct"] for b in blocks)
    return {"n": n, "correct": correct, "accuracy": correct / n if n else None,
            "reason": None if n else "no comparisons"}


def marvl_accuracy(table: pa.Table, scores: list[str], label: str = "label", caption: str = "caption_id",
                   language: str | None = "language", source: str = "input", id_column: str = "id") -> dict:
    """One row per instance (a caption and its image pair; `scores` are the caption's score with each
    image). Task 1: every (true, false) pair of one caption, max over the true pair's images above min over
    the false pair's. Task 2: captions with exactly two true and two false instances, both true maxima above
    both false minima; other captions are skipped and counted."""
    require_columns(table, {**{s: "numeric" for s in scores}, label: "label", caption: "label",
                            **({language: "label"} if language else {})}, source)
    matrix = np.column_stack([numbers(table, s, source, id_column) for s in scores])
    truth = {**{v: True for v in TRUE_LABELS}, **{v: False for v in FALSE_LABELS}}
    df = pl.DataFrame({"lang": group_labels(table, language, source, id_column).tolist(),
                       "caption": [str(v) for v in labels(table, caption, source, id_column)],
                       "label": _codes(table, label, truth, source, id_column).astype(bool),
                       "hi": matrix.max(axis=1), "lo": matrix.min(axis=1)})
    keys = ["lang", "caption"]
    pairs = df.filter(pl.col("label")).join(df.filter(~pl.col("label")), on=keys, suffix="_f")
    groups = df.group_by(keys).agg(
        trues=pl.col("label").sum(), n=pl.len(),
        true_min_hi=pl.col("hi").filter(pl.col("label")).min(), false_max_lo=pl.col("lo").filter(~pl.col("label")).max())
    four = groups.filter((pl.col("n") == 4) & (pl.col("trues") == 2))
    per_language = {}
    for code in sorted(df["lang"].unique().to_list()):
        p, g = pairs.filter(pl.col("lang") == code), four.filter(pl.col("lang") == code)
        per_language[code] = {
            "task1": accuracy_block((p["hi"] > p["lo_f"]).to_numpy(), (p["hi"] == p["lo_f"]).to_numpy()),
            "task2": accuracy_block((g["true_min_hi"] > g["false_max_lo"]).to_numpy()),
            "skipped_captions": int(groups.filter(pl.col("lang") == code).height - g.height)}
    return {"score_columns": list(scores), "per_language": per_language,
            "overall": {task: _pool([v[task] for v in per_language.values()]) for task in ("task1", "task2")}}
