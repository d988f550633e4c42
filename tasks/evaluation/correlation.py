"""Correlation of a score with human ratings (multilingual CLIPScore, Appendix B): Kendall τ-b and τ-c,
Spearman and Pearson, overall and per language, and per language within the bottom and top quartile of a
translation-QE column."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.schemas.contract import ContractError, Violation
from xmdata.schemas.evaluation import labels, numbers, require_columns, require_in_scale, row_labels

STATISTICS = ("kendall_tau_b", "kendall_tau_c", "spearman", "pearson")


def correlate(x: np.ndarray, y: np.ndarray) -> dict:
    """All four coefficients with p-values, or None for each with the reason they are undefined.

    τ-c is scipy's (Stuart's): m = the smaller number of distinct values of x and y, which for a continuous
    score is the number of rating levels present in the data (the paper's m when all levels occur)."""
    from scipy import stats  # noqa: PLC0415 — ~1 s of import, paid where a metric runs
    if len(x) != len(y):
        raise ContractError(f"score and rating differ in length ({len(x)} vs {len(y)})")
    out = {"n": int(len(x)), "reason": None}
    out.update({s: None for s in STATISTICS})
    out.update({f"{s}_p": None for s in STATISTICS})
    if len(x) < 2:
        out["reason"] = "fewer than two items"
    elif np.ptp(x) == 0 or np.ptp(y) == 0:
        out["reason"] = f"the {'score' if np.ptp(x) == 0 else 'rating'} is constant"
    else:
        for name, res in (("kendall_tau_b", stats.kendalltau(x, y, variant="b")),
                          ("kendall_tau_c", stats.kendalltau(x, y, variant="c")),
                          ("spearman", stats.spearmanr(x, y)), ("pearson", stats.pearsonr(x, y))):
            out[name], out[f"{name}_p"] = float(res.statistic), float(res.pvalue)
    return out


def qe_by_language(table: pa.Table, qe: str, language: list, source: str, id_column: str = "id") -> np.ndarray:
    """QE as float with NaN for languages that have none (the source language). A language with QE on
    some rows but not others is refused: which rows lack it is a pipeline bug, not a quartile."""
    values = table.column(qe).to_numpy(zero_copy_only=False).astype(np.float64)
    missing = ~np.isfinite(values)
    lang = np.asarray(language, dtype=object)
    for code in sorted(set(language)):
        rows = lang == code
        if missing[rows].any() and not missing[rows].all():
            raise ContractError([Violation(source, qe, f"language {code!r}: {int(missing[rows].sum())} of "
                                          f"{int(rows.sum())} rows have no QE score",
                                          row_labels(table, rows & missing, id_column))])
    return values


def quartile_masks(qe: np.ndarray) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Bottom (qe <= 25th percentile) and top (qe >= 75th percentile), numpy's linear percentiles."""
    low, high = np.quantile(qe, [0.25, 0.75])
    return qe <= low, qe >= high, float(low), float(high)


def rating_correlations(table: pa.Table, score: str, rating: str, language: str | None = None,
                        scale: tuple[float, float] | None = None, qe: str | None = None,
                        source: str = "input", id_column: str = "id") -> dict:
    """Score-vs-rating correlations overall, per language, and per language by QE quartile."""
    columns = {score: "numeric", rating: "numeric"}
    columns.update({language: "label"} if language else {})
    columns.update({qe: "numeric"} if qe else {})
    require_columns(table, columns, source)
    x, y = numbers(table, score, source, id_column), numbers(table, rating, source, id_column)
    if scale is not None:
        require_in_scale(table, rating, scale[0], scale[1], source, id_column)
    result = {"score_column": score, "rating_column": rating, "rating_scale": list(scale) if scale else None,
              "overall": correlate(x, y)}
    if language:
        lang = np.asarray(labels(table, language, source, id_column), dtype=object)
        codes = sorted(set(lang.tolist()), key=str)
        result["per_language"] = {str(c): correlate(x[lang == c], y[lang == c]) for c in codes}
        if qe:
            q = qe_by_language(table, qe, lang.tolist(), source, id_column)
            result["by_qe_quartile"] = {str(c): _by_quartile(x[lang == c], y[lang == c], q[lang == c])
                                        for c in codes}
    elif qe:
        q = qe_by_language(table, qe, ["all"] * table.num_rows, source, id_column)
        result["by_qe_quartile"] = {"all": _by_quartile(x, y, q)}
    return result


def _by_quartile(x: np.ndarray, y: np.ndarray, q: np.ndarray) -> dict:
    if not np.isfinite(q).any():
        return {"reason": "no QE scores for this language (the source language?)"}
    bottom, top, low, high = quartile_masks(q)
    return {"qe_q25": low, "qe_q75": high, "bottom": correlate(x[bottom], y[bottom]),
            "top": correlate(x[top], y[top]), "reason": None}
