"""Evaluate one metric over a Parquet output and publish what `xmdata evaluate` writes as Prefect
artifacts: the Markdown, its tables, and links to the JSON and PNG files."""
from __future__ import annotations

import os
from typing import Literal

from prefect import flow, get_run_logger
from prefect.artifacts import create_link_artifact, create_markdown_artifact, create_table_artifact

from xmdata.tasks.eval_args import evaluate_options
from xmdata.tasks.eval_report import clean, write_report
from xmdata.tasks.eval_runner import run_metric

Metric = Literal["correlation", "valse", "xvnli", "marvl", "pascal50s", "backretrieval", "mmmeb",
                 "caption-stats", "caption-ratings", "cider", "cider-gain"]


def _key(*parts: str) -> str:
    """Artifact keys allow lowercase letters, digits and dashes only."""
    return "-".join("".join(c if c.isalnum() else "-" for c in p.lower()) for p in parts)


@flow(name="evaluate")
def evaluate_flow(metric: Metric, input_path: str, out: str, options: dict | None = None) -> dict:
    """Run METRIC over INPUT_PATH with OPTIONS (the CLI's options by their long names with underscores,
    e.g. {"score_column": "clip_score", "qe_column": "qe_score"}) and write its files under OUT.

    Args:
        metric: which evaluation of the papers to run
        input_path: the table to evaluate (Parquet, CSV, JSONL)
        out: output folder for METRIC.json, .md and plots
        options: the CLI's options of that metric by long name, underscores for dashes
    """
    out = os.path.abspath(out)
    report = run_metric(metric, evaluate_options(metric, input_path, out, options))
    paths = write_report(report, out)
    create_markdown_artifact(report.markdown, key=_key("evaluate", metric), description=f"{metric} on {input_path}")
    for name, rows in report.tables.items():
        flat = [{k: v for k, v in row.items() if not isinstance(v, (dict, list))} for row in rows]
        create_table_artifact(flat, key=_key("evaluate", name, "table"), description=f"{name} per group")
    for path in paths:
        if not path.endswith(".md"):
            create_link_artifact(f"file://{path}", link_text=os.path.basename(path),
                                 key=_key("evaluate", os.path.basename(path)))
    get_run_logger().info("%s: wrote %s", metric, ", ".join(paths))
    return clean(report.result)
