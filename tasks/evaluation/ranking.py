"""Blocked cosine retrieval shared by BackRetrieval and MMMEB: one matrix product per block of queries,
never a Python loop over items. Ties are scored at their expectation under a random order."""
from __future__ import annotations

import numpy as np

from xmdata.tasks.decisions import DECISION_TOLERANCE

BLOCK = 1024  # queries per matrix product: 1,024 x 10,000 float32 similarities = 40 MB
# Cosines within this of each other are ties. The same dot product comes out of the BLAS a few float32
# ulps apart depending on where a row falls in the kernel's blocking (seen: a constant encoder's equal
# similarities differing, so k/N became 0.0327 instead of 0.0333): exact equality is machine-dependent.
TIE = DECISION_TOLERANCE


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (cosine similarity = dot product); all-zero rows stay zero."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms == 0, 1, norms)


def nearest(queries: np.ndarray, gallery: np.ndarray, block: int = BLOCK) -> np.ndarray:
    """Index of each query's most similar gallery row (first in gallery order on a tie, within TIE)."""
    out = np.empty(len(queries), dtype=np.int64)
    for start in range(0, len(queries), block):
        sims = queries[start:start + block] @ gallery.T
        out[start:start + block] = np.argmax(sims >= sims.max(axis=1, keepdims=True) - TIE, axis=1)
    return out


def recall_at_k(queries: np.ndarray, gallery: np.ndarray, gold: np.ndarray, k: int,
                block: int = BLOCK) -> np.ndarray:
    """Per query, the probability that gallery row `gold` ranks in the top k, ties in random order.

    With g rows more similar than gold and e others as similar (within TIE), gold's rank is uniform
    on g+1 .. g+e+1, so P(rank <= k) = clip(k - g, 0, e + 1) / (e + 1): a constant encoder gets k/N."""
    out = np.empty(len(queries), dtype=np.float64)
    for start in range(0, len(queries), block):
        sims = queries[start:start + block] @ gallery.T
        rows = np.arange(len(sims))
        own = sims[rows, gold[start:start + block]][:, None]
        greater = (sims > own + TIE).sum(axis=1)
        equal = (np.abs(sims - own) <= TIE).sum(axis=1) - 1
        out[start:start + block] = np.clip(k - greater, 0, equal + 1) / (equal + 1)
    return out


def mean_std(values: list[float]) -> dict:
    """Mean and sample standard deviation over seeds (std None for a single seed)."""
    arr = np.asarray(values, dtype=np.float64)
    return {"mean": float(arr.mean()) if len(arr) else None,
            "std": float(arr.std(ddof=1)) if len(arr) > 1 else None, "per_seed": arr.tolist()}
