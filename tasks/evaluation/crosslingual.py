"""The cross-language Pearson matrix of the same items' scores (multilingual CLIPScore, Figure 1): with
perfect translation and language-balanced models every cell would be 1. Optionally restricted to the
items whose translation QE is in the bottom or top quartile."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.schemas.evaluation import labels, numbers, require_columns, require_unique

from xmdata.tasks.evaluation.correlation import qe_by_language, quartile_masks


def _pearson(x: np.ndarray, y: np.ndarray) -> tuple[float | None, str | None]:
    from scipy import stats  # noqa: PLC0415 — ~1 s of import, paid where a metric runs
    if len(x) < 2:
        return None, "fewer than two common items"
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        return None, "constant scores"
    return float(stats.pearsonr(x, y).statistic), None


def cross_language_pearson(table: pa.Table, score: str, language: str, item: str, qe: str | None = None,
                           source: str = "input", id_column: str = "id") -> dict:
    """Pearson between every two languages over the items scored in both.

    With QE, an item's QE for a pair of languages is the lower of its two translations' QE (a source
    language without QE counts as perfect), so en–xx pairs use xx's quartiles; the bottom quartile is
    QE <= its 25th percentile over the pair's common items, the top quartile QE >= its 75th."""
    require_columns(table, {score: "numeric", language: "label", item: "label", **({qe: "numeric"} if qe else {})},
                    source)
    require_unique(table, [item, language], source, id_column)
    values = numbers(table, score, source, id_column)
    lang = labels(table, language, source, id_column)
    items, item_idx = np.unique(np.asarray([str(v) for v in labels(table, item, source, id_column)]),
                                return_inverse=True)
    codes, lang_idx = np.unique(np.asarray([str(v) for v in lang]), return_inverse=True)
    grid = np.full((len(items), len(codes)), np.nan)
    grid[item_idx, lang_idx] = values
    qe_grid = None
    if qe:
        q = qe_by_language(table, qe, lang, source, id_column)
        qe_grid = np.full_like(grid, np.nan)
        qe_grid[item_idx, lang_idx] = np.where(np.isfinite(q), q, np.inf)  # no QE: the source language
    subsets = ["all"] + (["bottom_quartile", "top_quartile"] if qe else [])
    out = {s: {"pearson": np.full((len(codes),) * 2, None, dtype=object).tolist(),
               "n": np.zeros((len(codes),) * 2, dtype=int).tolist()} for s in subsets}
    undefined = []
    for a in range(len(codes)):
        for b in range(a, len(codes)):
            common = np.isfinite(grid[:, a]) & np.isfinite(grid[:, b])
            x, y = grid[common, a], grid[common, b]
            masks = {"all": np.ones(len(x), dtype=bool)}
            if qe_grid is not None:
                pair_qe = np.minimum(qe_grid[common, a], qe_grid[common, b])
                if len(pair_qe) and np.isfinite(pair_qe).all():
                    masks["bottom_quartile"], masks["top_quartile"] = quartile_masks(pair_qe)[:2]
                else:
                    for s in subsets[1:]:
                        undefined.append({"languages": [codes[a], codes[b]], "subset": s,
                                          "reason": "no common items with QE scores"})
            for subset, mask in masks.items():
                r, reason = _pearson(x[mask], y[mask])
                for i, j in ((a, b), (b, a)):
                    out[subset]["pearson"][i][j], out[subset]["n"][i][j] = r, int(mask.sum())
                if reason:
                    undefined.append({"languages": [codes[a], codes[b]], "subset": subset, "reason": reason})
    return {"languages": codes.tolist(), "items": int(len(items)), "qe_column": qe, **out,
            "undefined": undefined}
