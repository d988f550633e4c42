"""What every matcher returns: the pairs it found, one element per match, in four aligned arrays."""
from __future__ import annotations

from typing import NamedTuple

import numpy as np


class Matches(NamedTuple):
    """`query_index` / `ref_index`: rows of the query and of the reference (for dedup, the input
    itself: each unordered pair once, query_index < ref_index); `measure`: the method's raw value
    (Hamming bits, cosine, Jaccard); `score`: in [0, 1], 1 = identical."""

    query_index: np.ndarray  # int64
    ref_index: np.ndarray  # int64
    measure: np.ndarray  # float64
    score: np.ndarray  # float64

    @classmethod
    def empty(cls) -> "Matches":
        return cls(np.empty(0, np.int64), np.empty(0, np.int64), np.empty(0, np.float64), np.empty(0, np.float64))

    @classmethod
    def of(cls, query_index, ref_index, measure, score) -> "Matches":
        return cls(np.asarray(query_index, np.int64), np.asarray(ref_index, np.int64),
                   np.asarray(measure, np.float64), np.asarray(score, np.float64))

    def __len__(self) -> int:  # type: ignore[override]
        return len(self.query_index)

    def concat(self, other: "Matches") -> "Matches":
        return Matches(*(np.concatenate([a, b]) for a, b in zip(self, other)))

    def best_k(self, k: int) -> "Matches":
        """At most K matches a query row, best score first (ties: the lower reference row), in query order."""
        if not len(self):
            return self
        order = np.lexsort((self.ref_index, -self.score, self.query_index))
        q = self.query_index[order]
        start = np.r_[0, np.flatnonzero(np.diff(q)) + 1]
        rank = np.arange(len(q)) - np.repeat(start, np.diff(np.r_[start, len(q)]))
        keep = order[rank < k]
        return Matches(*(a[keep] for a in self))
