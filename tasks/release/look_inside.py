"""The release run's way into its rows, as a Prefect artifact: the UI cannot open a local file, so it
names the commands that do (`xmdata explore`, `xmdata explain`) and, for every stage and reason that
refused rows, how many and one example row with the command that explains it."""
from __future__ import annotations

import os
import shlex

import polars as pl


def rejects_by_reason(out: str) -> list[dict]:
    """One row per (stage, reason) of OUT/rejects/*.parquet: count and the first row id (sorted)."""
    folder = os.path.join(out, "rejects")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".parquet")) if os.path.isdir(folder) else []
    frames = [pl.read_parquet(os.path.join(folder, n), columns=["stage", "reason", "row_id"], glob=False) for n in names]
    frames = [f for f in frames if f.height]
    if not frames:
        return []
    grouped = pl.concat(frames).group_by("stage", "reason").agg(
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
