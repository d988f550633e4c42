"""The one tolerance for decisions on float scores: QE and LID thresholds, best candidates, metric ties.

Measured (tests/release/test_demo_build.py, the other-kernels build): the same demo built with other CPU kernels (ATEN_CPU_CAPABILITY=default, oneDNN SSE4.1, MKL
SSE4.2, OpenBLAS Nehalem) moved clip_score by up to 3.9e-7, sequence_score by 1.4e-6 and qe_score by
1.3e-7. 1e-5 is 7x the largest of these (and 25x the largest score that decides anything, qe_score):
scores closer than this are ties, broken by a stable key; rows this close to a threshold keep the
threshold's plain rule (>= keeps) and are counted as `near_threshold`, since no rule can make a value
sitting on a threshold land on the same side under every kernel.
"""
from __future__ import annotations

import polars as pl

DECISION_TOLERANCE = 1e-5


def near(value: pl.Expr, threshold: float | None) -> pl.Expr:
    """True where `value` is within the tolerance of `threshold` (False for a null threshold or value)."""
    if threshold is None:
        return pl.lit(False)
    return ((value - threshold).abs() <= DECISION_TOLERANCE).fill_null(False)
