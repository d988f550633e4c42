"""Per target language: what came in and out, why rows were refused, and how QE is distributed.

The paper reports results for the bottom and top quartile by QE; the report gives each quartile's
bounds and mean, and translations.parquet carries every row's `qe_quartile` to split on.
"""
from __future__ import annotations

import polars as pl
import pyarrow as pa

from xmdata.runtime.figures import drawn_key, figure_key, pyplot, save_png

HISTOGRAM_BINS = 20


def _round(value) -> float | None:
    return None if value is None else round(float(value), 6)


def translation_report(candidates: pa.Table, translations: pa.Table) -> dict:
    cands, rows = pl.from_arrow(candidates), pl.from_arrow(translations)
    report = {}
    for target in sorted(rows["target_language"].unique().to_list()):
        mine = rows.filter(pl.col("target_language") == target)
        ok = mine.filter(pl.col("status") == "ok")
        scored = cands.filter((pl.col("target_language") == target) & (pl.col("status") == "ok"))
        rejected = mine.filter(pl.col("status") != "ok").group_by("reason").len().sort("reason")
        qe = ok["qe_score"].cast(pl.Float64)
        quartile = {f"q{q}_mean": _round(ok.filter(pl.col("qe_quartile") == q)["qe_score"].mean())
                    for q in (1, 4)}
        report[target] = {
            "rows_in": mine.height, "rows_out": ok.height,
            "acceptance_rate": _round(ok.height / mine.height) if mine.height else None,
            "rejected": dict(zip(rejected["reason"].to_list(), rejected["len"].to_list())),
            "candidates": scored.height,
            "candidates_lid_rejected": scored.filter(~pl.col("lid_match").fill_null(False)).height,
            "qe": {"mean": _round(qe.mean()), "min": _round(qe.min()), "max": _round(qe.max()),
                   "p25": _round(qe.quantile(0.25, "nearest")), "median": _round(qe.quantile(0.5, "nearest")),
                   "p75": _round(qe.quantile(0.75, "nearest")), "bottom_quartile_mean": quartile["q1_mean"],
                   "top_quartile_mean": quartile["q4_mean"]},
        }
    return report


def report_markdown(report: dict, histogram: str | None = None) -> str:
    lines = ["| target | rows in | kept | acceptance | rejected | candidates (LID-rejected) | QE mean "
             "| QE p25 / p75 | bottom / top quartile mean |",
             "| --- | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |"]
    fmt = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
    for target, r in report.items():
        rejected = ", ".join(f"{k}: {v}" for k, v in r["rejected"].items()) or "0"
        q = r["qe"]
        lines.append(f"| {target} | {r['rows_in']} | {r['rows_out']} | {fmt(r['acceptance_rate'])} | {rejected} "
                     f"| {r['candidates']} ({r['candidates_lid_rejected']}) | {fmt(q['mean'])} "
                     f"| {fmt(q['p25'])} / {fmt(q['p75'])} | {fmt(q['bottom_quartile_mean'])} / "
                     f"{fmt(q['top_quartile_mean'])} |")
    if histogram:
        lines += ["", f"QE distribution of kept translations: `{histogram}`"]
    return "\n".join(lines) + "\n"


def stable_bins(scores, step: float = 0.01):
    """HISTOGRAM_BINS edges over the scores' range rounded out to `step`: edges that float noise in
    the scores (1e-7 from another CPU's kernels) does not move, so the same numbers draw the same PNG."""
    import numpy as np

    if len(scores) == 0:
        return HISTOGRAM_BINS
    low, high = np.floor(scores.min() / step) * step, np.ceil(scores.max() / step) * step
    return np.linspace(low, max(high, low + step), HISTOGRAM_BINS + 1)


def write_qe_histogram(translations: pa.Table, path: str) -> None:
    """One panel per target: the QE scores of kept translations (kept as drawn when they are the same)."""
    key = figure_key(translations.select(["target_language", "status", "qe_score"]), "qe_histogram")
    if drawn_key(path) == key:
        return
    with pyplot() as plt:
        rows = pl.from_arrow(translations).filter(pl.col("status") == "ok")
        targets = sorted(pl.from_arrow(translations)["target_language"].unique().to_list())
        fig, axes = plt.subplots(1, max(1, len(targets)), figsize=(3.2 * max(1, len(targets)), 2.6),
                                 squeeze=False, sharey=True)
        for axis, target in zip(axes[0], targets):
            scores = rows.filter(pl.col("target_language") == target)["qe_score"].to_numpy()
            axis.hist(scores, bins=stable_bins(scores), color="#4c72b0")
            axis.set_title(f"{target} (n={len(scores)})", fontsize=9)
            axis.set_xlabel("COMETKiwi QE", fontsize=8)
        axes[0][0].set_ylabel("translations", fontsize=8)
        fig.tight_layout()
        save_png(fig, path, key, dpi=90)
        plt.close(fig)
