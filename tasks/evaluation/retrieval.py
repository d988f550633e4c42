"""MMMEB-style retrieval (xVLM2Vec): each query against a pool of its one gold candidate and n seeded
distractors (n = 999 when the set has >= 1,000 items, else 99; every class for classification), P@1
per task x language, and McNemar's test between two systems on the same pools."""
from __future__ import annotations

import zlib

import numpy as np

from xmdata.schemas.contract import ContractError

from xmdata.tasks.evaluation.ranking import TIE, unit_rows

BLOCK = 512  # queries per block: 512 x 10,000 random keys and similarities


def distractor_count(n_items: int) -> int:
    return 999 if n_items >= 1000 else 99


def group_rng(seed: int, *names: str) -> np.random.Generator:
    """One generator per (task, language), from the seed and the names alone: two systems scored on the
    same table draw the same pools, whatever else the table holds."""
    return np.random.default_rng([seed, *(zlib.crc32(str(n).encode()) for n in names)])


def retrieval_hits(queries: np.ndarray, targets: np.ndarray, keys: np.ndarray, distractors: int | None,
                   rng: np.random.Generator, block: int = BLOCK) -> tuple[np.ndarray, int]:
    """Per query, whether its gold candidate ranks first in its pool; and the pool size.

    Candidates are the distinct `keys` (rows sharing a key share one candidate: its first row's target).
    The pool is the gold plus `distractors` others drawn without replacement (None: all others). A gold
    tied with distractors wins a seeded draw with probability 1 / (1 + ties)."""
    _, first, gold = np.unique(keys, return_index=True, return_inverse=True)
    pool, q = unit_rows(targets[first]), unit_rows(queries)
    others = len(first) - 1
    n = others if distractors is None else min(distractors, others)
    hits = np.empty(len(q), dtype=bool)
    for start in range(0, len(q), block):
        sims = q[start:start + block] @ pool.T
        g = gold[start:start + block]
        own = sims[np.arange(len(sims)), g][:, None]
        if n == others:
            greater, equal = (sims > own + TIE).sum(axis=1), (np.abs(sims - own) <= TIE).sum(axis=1) - 1
        else:  # n distinct of the others: the n smallest of random keys, shifted past the gold
            pick = np.argpartition(rng.random((len(sims), others), dtype=np.float32), n - 1, axis=1)[:, :n]
            pick += pick >= g[:, None]
            chosen = np.take_along_axis(sims, pick, axis=1)
            greater, equal = (chosen > own + TIE).sum(axis=1), (np.abs(chosen - own) <= TIE).sum(axis=1)
        hits[start:start + block] = (greater == 0) & (rng.random(len(sims)) * (equal + 1) < 1)
    return hits, n + 1


def mcnemar(a: np.ndarray, b: np.ndarray, exact_below: int = 25) -> dict:
    """McNemar's test on paired hits: chi-squared with continuity correction, (|b - c| - 1)^2 / (b + c),
    when the discordant pairs b + c >= 25, else the exact two-sided binomial test (statistic = min(b, c))."""
    from scipy import stats  # noqa: PLC0415 — ~1 s of import, paid where a metric runs
    a, b = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    if a.shape != b.shape:
        raise ContractError(f"McNemar needs the same items for both systems ({len(a)} vs {len(b)} outcomes)")
    only_a, only_b = int(np.sum(a & ~b)), int(np.sum(~a & b))
    discordant = only_a + only_b
    out = {"only_first": only_a, "only_second": only_b, "discordant": discordant}
    if discordant == 0:
        return {**out, "method": None, "statistic": None, "p_value": 1.0,
                "reason": "no discordant pairs: the systems agree on every item"}
    if discordant >= exact_below:
        statistic = (abs(only_a - only_b) - 1) ** 2 / discordant
        return {**out, "method": "chi2-continuity", "statistic": float(statistic),
                "p_value": float(stats.chi2.sf(statistic, df=1)), "reason": None}
    return {**out, "method": "exact-binomial", "statistic": min(only_a, only_b),
            "p_value": float(stats.binomtest(only_a, discordant, 0.5).pvalue), "reason": None}
