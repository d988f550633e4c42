"""What every evaluation writes: `<metric>.json` (deterministic), `<metric>.md` and PNG figures."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic, write_text_atomic

SIGNIFICANT_DIGITS = 10  # drops last-bit noise of BLAS sums; far beyond any reported precision


@dataclass
class Report:
    """A metric's result (JSON-able), its Markdown, figures to draw (suffix -> writer(path)), and tables
    that a Prefect run shows as table artifacts."""

    metric: str
    result: dict
    markdown: str
    figures: dict[str, Callable[[str], None]] = field(default_factory=dict)
    tables: dict[str, list[dict]] = field(default_factory=dict)


def clean(value):
    """JSON-able plain values: numpy scalars unwrapped, floats rounded, NaN refused (use None + reason)."""
    if isinstance(value, dict):
        return {str(k): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple, np.ndarray)):
        return [clean(v) for v in value]
    if isinstance(value, (bool, np.bool_)):
        return bool(value)
    if isinstance(value, (int, np.integer)):
        return int(value)
    if isinstance(value, (float, np.floating)):
        if not math.isfinite(value):
            raise ValueError(f"non-finite number {value!r} in a result: report None with a reason instead")
        return float(f"{float(value):.{SIGNIFICANT_DIGITS}g}") + 0.0  # + 0.0 turns -0.0 into 0.0
    return value


def write_report(report: Report, out: str) -> list[str]:
    """Write JSON, Markdown and PNGs under `out`; returns the paths written."""
    paths = [storage.join(out, f"{report.metric}.json"), storage.join(out, f"{report.metric}.md")]
    write_json_atomic(clean(report.result), paths[0])
    write_text_atomic(report.markdown.rstrip() + "\n", paths[1])
    for suffix, draw in report.figures.items():
        paths.append(storage.join(out, f"{report.metric}{suffix}.png"))
        draw(paths[-1])
    return paths


def fmt(value, percent: bool = False) -> str:
    if value is None:
        return "—"
    if isinstance(value, (bool, np.bool_)):
        return "yes" if value else "no"
    if isinstance(value, (int, np.integer)):
        return f"{int(value):,}"
    if isinstance(value, (float, np.floating)):
        if percent:
            return f"{100 * value:.1f}"
        return f"{value:.1e}" if 0 < abs(value) < 5e-4 else f"{value:.3f}"  # p-values stay readable
    return str(value)


def md_table(rows: list[dict], columns: list[str], percent: tuple[str, ...] = ()) -> str:
    """A Markdown table of `rows` (None shows as —); columns in `percent` show fractions as %."""
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    for row in rows:
        lines.append("| " + " | ".join(fmt(row.get(c), c in percent) for c in columns) + " |")
    return "\n".join(lines) + "\n"
