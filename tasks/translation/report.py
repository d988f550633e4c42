"""Per target language: what came in and out, why rows were refused, and how QE is distributed.

The paper reports results for the bottom and top quartile by QE; the report gives each quartile's
bounds and mean, and translations.parquet carries every row's `qe_quartile` to split on.
"""
from __future__ import annotations

import numpy as np
import polars as pl
import pyarrow as pa

from xmdata.runtime.figures import drawn_key, figure_key, pyplot, save_png
from xmdata.tasks.translation.select import QuartileRanks, near_threshold_counts

HISTOGRAM_BINS = 20


def _round(value) -> float | None:
    return None if value is None else round(float(value), 6) + 0.0  # + 0.0: -0.0 printed as 0.0, whatever came first


class ReportTally:
    """The report's counts, added shard by shard (a unit's candidates all in one shard), and each
    kept unit's QE score: what the report, the histogram and `QuartileRanks` need of the whole table."""

    def __init__(self, engines: list[str] | None = None):
        self.engines = engines  # a pool's engine labels, in order: each one's share is counted
        self.by_engine: dict[str, dict[str, list]] = {}  # target -> engine -> [kept, QE sum]
        self.engines_seen: dict[str, set[str]] = {}  # target -> engines with candidate rows for it
        self.counts: dict[str, dict] = {}
        self.kept_scores: dict[str, list[np.ndarray]] = {}
        self.near_threshold: dict[str, int] = {}

    def add(self, candidates: pa.Table, units: pl.DataFrame) -> None:
        cands = pl.from_arrow(candidates).filter(pl.col("status") == "ok")
        per_target = cands.group_by("target_language").agg(
            pl.len().alias("candidates"), (~pl.col("lid_match").fill_null(False)).sum().alias("lid_rejected"))
        for target, count, lid_rejected in per_target.iter_rows():
            tally = self._target(target)
            tally["candidates"] += count
            tally["candidates_lid_rejected"] += lid_rejected
        for target, status, reason, count in units.group_by("target_language", "status", "reason").len().iter_rows():
            tally = self._target(target)
            tally["rows_in"] += count
            if status == "ok":
                tally["rows_out"] += count
            else:
                tally["rejected"][reason] = tally["rejected"].get(reason, 0) + count
        if self.engines:
            self._add_engines(candidates, units)
        for target, near in near_threshold_counts(units).items():
            self.near_threshold[target] = self.near_threshold.get(target, 0) + near
        for target, scores in QuartileRanks.kept_scores(units).items():
            self.kept_scores.setdefault(target, []).append(scores)

    def _add_engines(self, candidates: pa.Table, units: pl.DataFrame) -> None:
        seen = pl.from_arrow(candidates.select(["target_language", "engine"])).unique()
        for target, engine in seen.iter_rows():
            self.engines_seen.setdefault(target, set()).add(engine)
        kept = units.filter(pl.col("status") == "ok").group_by("target_language", "engine").agg(
            pl.len(), pl.col("qe_score").cast(pl.Float64).sum())
        for target, engine, count, qe_sum in kept.iter_rows():
            tally = self.by_engine.setdefault(target, {}).setdefault(engine, [0, 0.0])
            tally[0] += count
            tally[1] += qe_sum or 0.0

    def engine_report(self, target: str, kept: int) -> dict:
        """Per engine of the pool: its share of the target's kept translations and their mean QE; the
        engines that made no candidate for it (left to the others)."""
        found = self.by_engine.get(target, {})
        shares = {}
        for engine in [*self.engines, *sorted(set(found) - set(self.engines))]:  # a segment mix: a+b
            count, qe_sum = found.get(engine, [0, 0.0])
            if engine in self.engines or count:
                shares[engine] = {"chosen": count, "share": _round(count / kept) if kept else None,
                                  "qe_mean": _round(qe_sum / count) if count else None}
        return {"engines": shares,
                "left_to_others": [e for e in self.engines if e not in self.engines_seen.get(target, set())]}

    def _target(self, target: str) -> dict:
        return self.counts.setdefault(target, {"rows_in": 0, "rows_out": 0, "rejected": {}, "candidates": 0,
                                               "candidates_lid_rejected": 0})

    def quartiles(self) -> QuartileRanks:
        return QuartileRanks({t: self.kept_scores.get(t, [np.zeros(0, np.float32)]) for t in self.counts})

    def report(self, quartiles: QuartileRanks) -> dict:
        """Per target: rows in and out, reasons, candidates (LID-rejected), the kept units' QE."""
        report = {}
        for target in sorted(self.counts):
            tally, scores = self.counts[target], quartiles.scores[target]
            qe, size = pl.Series(scores, dtype=pl.Float32).cast(pl.Float64), len(scores)
            first, last = (size + 3) // 4, size - (3 * size + 3) // 4  # units in quartiles 1 and 4
            report[target] = {
                "rows_in": tally["rows_in"], "rows_out": tally["rows_out"],
                "acceptance_rate": _round(tally["rows_out"] / tally["rows_in"]) if tally["rows_in"] else None,
                "rejected": dict(sorted(tally["rejected"].items())),
                "candidates": tally["candidates"], "candidates_lid_rejected": tally["candidates_lid_rejected"],
                "qe": {"mean": _round(qe.mean()), "min": _round(qe.min()), "max": _round(qe.max()),
                       "p25": _round(qe.quantile(0.25, "nearest")), "median": _round(qe.quantile(0.5, "nearest")),
                       "p75": _round(qe.quantile(0.75, "nearest")),
                       "bottom_quartile_mean": _round(pl.Series(scores[:first], dtype=pl.Float32).mean()),
                       "top_quartile_mean": _round(pl.Series(scores[size - last:], dtype=pl.Float32).mean())},
            }
            if self.engines:
                report[target].update(self.engine_report(target, tally["rows_out"]))
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


def engines_markdown(report: dict) -> str:
    """A pool's lines: per target, each engine's share of the kept translations and their mean QE, and
    a counted line for the targets an engine left to the others."""
    engines = list(next(iter(report.values()), {}).get("engines", {}))
    fmt = lambda v: "–" if v is None else f"{v:.3f}"  # noqa: E731
    lines = ["| target | " + " | ".join(f"{e}: share (QE mean)" for e in engines) + " |",
             "| --- | " + " | ".join("---:" for _ in engines) + " |"]
    for target, r in report.items():
        cells = [r["engines"].get(e, {}) for e in engines]
        lines.append(f"| {target} | " + " | ".join(f"{fmt(c.get('share'))} ({fmt(c.get('qe_mean'))})" for c in cells)
                     + " |")
    left: dict[str, list[str]] = {}
    for target, r in report.items():
        for engine in r["left_to_others"]:
            left.setdefault(engine, []).append(target)
    lines += [""] + [f"{engine} left {len(targets)} target(s) to the other engines: {', '.join(targets)}"
                     for engine, targets in left.items()]
    return "\n".join(lines) + "\n"


def stable_bins(scores, step: float = 0.01):
    """HISTOGRAM_BINS edges over the scores' range rounded out to `step`: edges that float noise in
    the scores (1e-7 from another CPU's kernels) does not move, so the same numbers draw the same PNG."""
    import numpy as np

    if len(scores) == 0:
        return HISTOGRAM_BINS
    low, high = np.floor(scores.min() / step) * step, np.ceil(scores.max() / step) * step
    return np.linspace(low, max(high, low + step), HISTOGRAM_BINS + 1)


def write_qe_histogram(scores: dict[str, np.ndarray], path: str) -> None:
    """One panel per target: the QE scores of its kept translations, SCORES (kept as drawn when they
    are the same)."""
    targets = sorted(scores)
    ordered = [np.sort(scores[t]).astype(np.float32) for t in targets]  # one row a target: no object a score
    offsets = np.cumsum([0] + [len(s) for s in ordered]).astype(np.int32)
    drawn = pa.table({"target_language": targets, "qe_scores": pa.ListArray.from_arrays(
        offsets, pa.array(np.concatenate(ordered) if ordered else np.zeros(0, np.float32)))})
    key = figure_key(drawn, "qe_histogram")
    if drawn_key(path) == key:
        return
    with pyplot() as plt:
        fig, axes = plt.subplots(1, max(1, len(targets)), figsize=(3.2 * max(1, len(targets)), 2.6),
                                 squeeze=False, sharey=True)
        for axis, target in zip(axes[0], targets):
            axis.hist(scores[target], bins=stable_bins(scores[target]), color="#4c72b0")
            axis.set_title(f"{target} (n={len(scores[target])})", fontsize=9)
            axis.set_xlabel("COMETKiwi QE", fontsize=8)
        axes[0][0].set_ylabel("translations", fontsize=8)
        fig.tight_layout()
        save_png(fig, path, key, dpi=90)
