"""Evaluate one metric over a Parquet output and publish what `xmdata evaluate` writes as Prefect
artifacts: the Markdown with its plots inside it (the UI shows no file:// image) and the files'
paths, and its tables."""
from __future__ import annotations

import os
from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from xmdata.runtime.folder_lock import one_writer
from xmdata.tasks.build.plot_markdown import plots_section
from xmdata.tasks.evaluation.params import EvaluationParams
from xmdata.tasks.evaluation.report import clean, write_report
from xmdata.tasks.evaluation.runner import run_metric


def _key(*parts: str) -> str:
    """Artifact keys allow lowercase letters, digits and dashes only."""
    return "-".join("".join(c if c.isalnum() else "-" for c in p.lower()) for p in parts)


@flow(name="evaluate")
def evaluate_flow(params: EvaluationParams, input_path: str, out: str) -> dict:
    """Run one metric over INPUT_PATH and write its files under OUT.

    Args:
        params: which evaluation of the papers to run, and its options
        input_path: the table to evaluate (Parquet, CSV, JSONL)
        out: output folder for <metric>.json, .md and plots

    Docs: docs/how-to/evaluate.md; every option: docs/reference/commands.md#evaluate.
    """
    out, metric = os.path.abspath(out), params.metric
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        report = run_metric(metric, params.runner_options(input_path, out))
        paths = write_report(report, out)
        plots = [p for p in paths if p.endswith(".png")]
        written = "\n\nFiles: " + ", ".join(f"`{p}`" for p in paths)
        create_markdown_artifact(report.markdown + plots_section(plots) + written, key=_key("evaluate", metric),
                                 description=f"{metric} on {input_path}")
        for name, rows in report.tables.items():
            flat = [{k: v for k, v in row.items() if not isinstance(v, (dict, list))} for row in rows]
            create_table_artifact(flat, key=_key("evaluate", name, "table"), description=f"{name} per group")
        get_run_logger().info("%s: wrote %s", metric, ", ".join(paths))
        return clean(report.result)
