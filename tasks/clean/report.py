"""report.json and report.md of a dedup or contamination run: what was checked against what, the
matches per method and reference, each method's threshold, and the scores near each threshold (a
histogram of the measure in the band around it, so that a reader sees how many pairs a slightly
stricter or looser threshold would change)."""
from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from .match import UNITS

BINS = 10


def near_threshold(measures: np.ndarray, threshold: float, unit: str) -> dict:
    """Counts of matched measures in BINS bins from the threshold inwards (bits: 0..threshold; a
    similarity: threshold..1, the last bin closed)."""
    if unit == "hamming_bits":
        edges = np.arange(0, threshold + 2) - 0.5
    elif unit == "normalised_equal":
        return {"edges": [1.0, 1.0], "counts": [int(len(measures))]}
    else:
        edges = np.linspace(threshold, 1.0, BINS + 1)
    counts, _ = np.histogram(measures, bins=edges)
    return {"edges": [round(float(e), 6) for e in edges], "counts": [int(c) for c in counts]}


def clean_report(mode: str, kind: str, input_path: str, references: list[str], rows: int, kept: int,
                 matches: pa.Table, rejects: pa.Table, thresholds: dict[str, float], methods: list[str],
                 groups: dict[str, str] | None = None) -> dict:
    pairs = Counter(zip(matches.column("method").to_pylist(), matches.column("match_source").to_pylist()))
    rows_matched = Counter()
    for (method, source), ids in _ids_by(matches).items():
        rows_matched[(method, source)] = len(ids)
    methods_report = {}
    for method in methods:
        measure = matches.filter(pa.compute.equal(matches.column("method"), method)).column("measure").to_numpy()
        methods_report[method] = {
            "threshold": thresholds[method], "unit": UNITS[method], "matches": int(len(measure)),
            "near_threshold": near_threshold(measure, thresholds[method], UNITS[method])}
    report = {
        "mode": mode, "kind": kind, "input": input_path, "references": references, "rows": rows, "kept": kept,
        "rejected": dict(sorted(Counter(rejects.column("reason").to_pylist()).items())),
        "methods": methods_report,
        "by_method_and_source": [{"method": m, "match_source": s, "matches": n, "rows": rows_matched[(m, s)]}
                                 for (m, s), n in sorted(pairs.items())],
    }
    if groups is not None:
        sizes = Counter(groups.values())
        report["groups"] = {"count": len(sizes), "rows_in_groups": sum(sizes.values()),
                            "largest": max(sizes.values(), default=0)}
    return report


def _ids_by(matches: pa.Table) -> dict[tuple[str, str], set]:
    out: dict[tuple[str, str], set] = {}
    for i, m, s in zip(matches.column("id").to_pylist(), matches.column("method").to_pylist(),
                       matches.column("match_source").to_pylist()):
        out.setdefault((m, s), set()).add(i)
    return out


def report_markdown(report: dict) -> str:
    what = "near-duplicates inside the set" if report["mode"] == "dedup" else \
        "overlap with " + ", ".join(f"`{r}`" for r in report["references"])
    lines = [f"# {report['mode'].capitalize()} of `{report['input']}` ({report['kind']})", "",
             f"Checked for {what}: {report['rows']} rows, {report['kept']} kept.", ""]
    if report["rejected"]:
        lines += ["| reason | rows |", "|---|---:|"] + [f"| {r} | {n} |" for r, n in report["rejected"].items()] + [""]
    lines += ["| method | threshold | unit | matches |", "|---|---:|---|---:|"]
    lines += [f"| {m} | {v['threshold']} | {v['unit']} | {v['matches']} |" for m, v in report["methods"].items()]
    if report["by_method_and_source"]:
        lines += ["", "| method | source | matches | rows |", "|---|---|---:|---:|"]
        lines += [f"| {e['method']} | {e['match_source']} | {e['matches']} | {e['rows']} |"
                  for e in report["by_method_and_source"]]
    lines += ["", "Scores near each threshold (matched pairs per bin of the measure):", ""]
    for method, v in report["methods"].items():
        bins = v["near_threshold"]
        cells = ", ".join(f"{lo:g}–{hi:g}: {c}" for lo, hi, c in zip(bins["edges"], bins["edges"][1:], bins["counts"]))
        lines.append(f"- {method}: {cells or 'no pairs'}")
    if "groups" in report:
        g = report["groups"]
        lines += ["", f"{g['count']} group(s) of near-duplicates, {g['rows_in_groups']} rows in them, the largest "
                  f"{g['largest']}; each keeps its first id (code-point order), the others are refused as near_duplicate."]
    return "\n".join(lines) + "\n"
