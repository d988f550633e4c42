"""Pairwise accuracies of a caption score: VALSE (caption above its foil, per phenomenon) and Pascal-50S
(agreement with the annotators' majority, per category HC/HI/HM/MM)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.schemas.contract import ContractError, Violation
from xmdata.schemas.evaluation import labels, numbers, require_columns, row_labels

PASCAL_CATEGORIES = ("HC", "HI", "HM", "MM")


def accuracy_block(correct: np.ndarray, ties: np.ndarray | None = None) -> dict:
    """n, correct, tied comparisons and accuracy (None with a reason when there is nothing to count)."""
    n = int(len(correct))
    out = {"n": n, "correct": int(np.sum(correct)), "accuracy": float(np.mean(correct)) if n else None,
           "reason": None if n else "no comparisons"}
    if ties is not None:
        out["ties"] = int(np.sum(ties))
    return out


def group_labels(table: pa.Table, column: str | None, source: str, id_column: str) -> np.ndarray:
    if column is None:
        return np.full(table.num_rows, "all", dtype=object)
    return np.asarray([str(v) for v in labels(table, column, source, id_column)], dtype=object)


def valse_accuracy(table: pa.Table, caption_score: str, foil_score: str, phenomenon: str | None = "phenomenon",
                   language: str | None = "language", source: str = "input", id_column: str = "id") -> dict:
    """Share of (image, caption, foil) rows where the caption scores strictly above its foil; a tie counts
    as wrong (the metric did not tell them apart) and is reported. Per language: every row (micro) and
    the mean over phenomena (macro, VALSE's 'Avg.')."""
    require_columns(table, {caption_score: "numeric", foil_score: "numeric",
                            **{c: "label" for c in (phenomenon, language) if c}}, source)
    caption, foil = numbers(table, caption_score, source, id_column), numbers(table, foil_score, source, id_column)
    correct, ties = caption > foil, caption == foil
    lang, phen = group_labels(table, language, source, id_column), group_labels(table, phenomenon, source, id_column)
    per_language = {}
    for code in sorted(set(lang)):
        rows = lang == code
        by_phenomenon = {p: accuracy_block(correct[rows & (phen == p)], ties[rows & (phen == p)])
                         for p in sorted(set(phen[rows]))}
        per_language[code] = {**accuracy_block(correct[rows], ties[rows]), "per_phenomenon": by_phenomenon,
                              "phenomenon_average": float(np.mean([b["accuracy"] for b in by_phenomenon.values()]))}
    return {"caption_score_column": caption_score, "foil_score_column": foil_score,
            "overall": accuracy_block(correct, ties), "per_language": per_language}


def pascal50s_accuracy(table: pa.Table, score_a: str, score_b: str, votes_a: str, votes_b: str,
                       category: str = "category", seed: int = 0, source: str = "input",
                       id_column: str = "id") -> dict:
    """How often the metric prefers the caption most annotators preferred. Ties — equal votes, or equal
    scores — are each broken by a fair coin from one seeded generator (rows in id order when the table has
    ids, so the draw does not depend on row order)."""
    require_columns(table, {score_a: "numeric", score_b: "numeric", votes_a: "numeric", votes_b: "numeric",
                            category: "label"}, source)
    if id_column in table.column_names:
        table = table.sort_by(id_column)
    sa, sb = numbers(table, score_a, source, id_column), numbers(table, score_b, source, id_column)
    va, vb = numbers(table, votes_a, source, id_column), numbers(table, votes_b, source, id_column)
    fractional = (va != np.round(va)) | (vb != np.round(vb))
    if fractional.any():  # votes are counts of judgements: 1.5 is a column of something else
        raise ContractError([Violation(source, f"{votes_a}/{votes_b}", f"{int(fractional.sum())} vote count(s) "
                                      "are not whole numbers", row_labels(table, fractional, id_column))])
    negative = (va < 0) | (vb < 0)
    if negative.any():
        raise ContractError([Violation(source, f"{votes_a}/{votes_b}", f"{int(negative.sum())} negative vote "
                                      "count(s)", row_labels(table, negative, id_column))])
    rng = np.random.default_rng(seed)
    human_coin, metric_coin = rng.random(len(sa)) < 0.5, rng.random(len(sa)) < 0.5
    human_a = (va > vb) | ((va == vb) & human_coin)
    metric_a = (sa > sb) | ((sa == sb) & metric_coin)
    correct = human_a == metric_a
    cat = group_labels(table, category, source, id_column)
    order = [c for c in PASCAL_CATEGORIES if c in set(cat)] + sorted(set(cat) - set(PASCAL_CATEGORIES))
    per_category = {c: {**accuracy_block(correct[cat == c]), "human_ties": int(np.sum((va == vb)[cat == c])),
                        "metric_ties": int(np.sum((sa == sb)[cat == c]))} for c in order}
    return {"seed": seed, "overall": accuracy_block(correct), "per_category": per_category,
            "category_average": float(np.mean([b["accuracy"] for b in per_category.values()])) if order else None,
            "human_ties": int(np.sum(va == vb)), "metric_ties": int(np.sum(sa == sb))}
