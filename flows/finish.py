"""How a build accounts for its work: a step that runs in the flow's process (an import, MMMEB
assembly and embedding, a benchmark set's translation selection) reported like a one-shard stage,
and at the end the summary files, a Prefect artifact and the run's counts."""
from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa
from prefect.artifacts import create_markdown_artifact

from xmdata.runtime.atomic import write_parquet_atomic
from xmdata.runtime.process import StageReport
from xmdata.tasks.build.plot_markdown import plots_section
from xmdata.tasks.build.summary import summary_markdown, write_summary


def step_report(stage: str, rows_in: int, rows_out: int, rejects: pa.Table, work: str) -> StageReport:
    """Counted rows in and out, refusals by reason, and the rejects where a stage's go (gather_rejects)."""
    write_parquet_atomic(rejects, os.path.join(work, stage, "rejects", "shard-00000.parquet"))
    reasons = dict(sorted(Counter(rejects.column("reason").to_pylist()).items()))
    return StageReport(stage, [{"rows_in": rows_in, "rows_out": rows_out, "rows_rejected": reasons}], 1, 0)


def finish_build(out: str, reports: list[StageReport], distributions: dict, title: str,
                 extra_markdown: str = "", plots: tuple[str, ...] = ()) -> dict:
    """summary.json and the run's `build-summary` artifact, with PLOTS (PNG paths) shown inside it."""
    summary = write_summary(out, reports, distributions)
    create_markdown_artifact(f"## {title}\n\n{summary_markdown(summary)}{extra_markdown}{plots_section(list(plots))}",
                             key="build-summary", description=title)
    summary["run"] = {r.stage: r.run_counts() for r in reports}
    return summary
