"""The release run's way into its rows, as a Prefect artifact: the UI cannot open a local file, so it
names the commands that do (`xmdata explore`, `xmdata explain`) and, for every stage and reason that
refused rows, how many and one example row with the command that explains it."""
from __future__ import annotations

import os
import shlex

import polars as pl

from .explore_tables import rejects_table


def rejects_by_reason(out: str) -> list[dict]:
    """One row per (stage, reason) of OUT/rejects/*.parquet: count and the first row id (sorted)."""
    rejects = rejects_table(out)  # the published rejects, as the explore page reads them
    if not rejects.height:
        return []
    grouped = rejects.group_by("stage", "reason").agg(
        pl.len().alias("rows"), pl.col("row_id").drop_nulls().sort().first().alias("example"))
    return grouped.sort("stage", "reason").to_dicts()


def look_inside_markdown(out: str) -> str:
    """Markdown: how to browse OUT and explain a row, and the rejects by stage and reason."""
    where = shlex.quote(out)
    lines = ["## Look inside", "",
             f"- Browse it: `xmdata explore {where}` (serves `explore/index.html` on 127.0.0.1 with a token), "
             f"or open `{os.path.join(out, 'explore', 'index.html')}` in a browser on this machine.",
             f"- Why a row is where it is: `xmdata explain {where} ID` (`--json` for scripts).", ""]
    rows = rejects_by_reason(out)
    if not rows:
        return "\n".join(lines + ["No stage refused a row."]) + "\n"
    lines += ["| stage | reason | rows | example | explain it |", "|---|---|---:|---|---|"]
    lines += [f"| {r['stage']} | {r['reason']} | {r['rows']} | {r['example'] or '—'} | "
              + (f"`xmdata explain {where} {shlex.quote(r['example'])}`" if r["example"] else "—") + " |"
              for r in rows]
    return "\n".join(lines) + "\n"
