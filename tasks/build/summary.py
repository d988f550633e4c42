"""A build's summary: what each stage kept and refused (reproducible), and how the run went."""
from __future__ import annotations

import polars as pl

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic, write_text_atomic
from xmdata.runtime.process import StageReport


def stage_summary(report: StageReport) -> dict:
    """What a stage kept and refused: the same whatever the shard plan (its shard count is how the run
    went, in run.json's `shards_total`)."""
    return {"rows_in": report.rows_in, "rows_out": report.rows_out, "rejected": report.rejected}


def label_counts(paths: list[str], column: str) -> dict[str, int]:
    return frame_label_counts(pl.concat([pl.from_arrow(storage.read_parquet(p, columns=[column])) for p in paths]),
                              column)


def frame_label_counts(frame: pl.DataFrame, column: str, counted: str | None = None) -> dict[str, int]:
    """{label: rows}, most frequent first (ties by label). `counted`: a column of rows each row of
    FRAME stands for (counts made shard by shard), instead of one each."""
    grouped = frame.group_by(column)
    counts = grouped.agg(pl.col(counted).sum().alias("len")) if counted else grouped.len()
    counts = counts.sort(["len", column], descending=[True, False])
    return {row[column]: row["len"] for row in counts.iter_rows(named=True)}


def summary_markdown(summary: dict) -> str:
    lines = ["| stage | rows in | rows out | rejected |", "| --- | ---: | ---: | --- |"]
    for name, s in summary["stages"].items():
        rejected = ", ".join(f"{k}: {v}" for k, v in s["rejected"].items()) or "0"
        lines.append(f"| {name} | {s['rows_in']} | {s['rows_out']} | {rejected} |")
    for title, counts in summary.get("distributions", {}).items():
        lines += ["", f"**{title}**: " + ", ".join(f"{k} {v}" for k, v in counts.items())]
    return "\n".join(lines) + "\n"


def write_summary(root: str, reports: list[StageReport], distributions: dict) -> dict:
    """summary.json/.md hold data facts only (byte-identical across reruns); run.json how it ran."""
    summary = {"stages": {r.stage: stage_summary(r) for r in reports}, "distributions": distributions}
    write_json_atomic(summary, storage.join(root, "summary.json"))
    write_text_atomic(summary_markdown(summary), storage.join(root, "summary.md"))
    write_json_atomic({r.stage: r.run_counts() for r in reports}, storage.join(root, "run.json"))
    return summary
