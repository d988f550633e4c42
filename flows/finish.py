"""The last step of every build: summary files, a Prefect artifact, and the run's counts."""
from __future__ import annotations

from prefect.artifacts import create_markdown_artifact

from xmdata.runtime.process import StageReport
from xmdata.tasks.build.summary import summary_markdown, write_summary


def finish_build(out: str, reports: list[StageReport], distributions: dict, title: str,
                 extra_markdown: str = "") -> dict:
    summary = write_summary(out, reports, distributions)
    create_markdown_artifact(f"## {title}\n\n{summary_markdown(summary)}{extra_markdown}",
                             key="build-summary", description=title)
    summary["run"] = {r.stage: r.run_counts() for r in reports}
    return summary
