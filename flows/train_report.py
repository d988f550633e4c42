"""What both training flows publish when a run ends: summary.md in the run folder, the same as a
Prefect artifact, a log line, and the run's record in the shape every command reports (one "shard":
trained, or skipped when the checkpoint already held every step)."""
from __future__ import annotations

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from xmdata.runtime import storage
from xmdata.runtime.owner_only import write_private


def report_training(kind: str, title: str, out: str, result: dict, where: str, extra: str = "") -> dict:
    """`kind`: the flow's name (train-distill…); `extra`: what else the last line points to."""
    lines = [f"## {title}", "",
             f"{result['steps']} optimizer steps ({result['resumed_from']} resumed from the checkpoint), ran {where}.",
             "", "| figure | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in result["figures"].items()), "",
             f"Model: `{result['model']}`; loss log: `{result['artifacts']['losses']}`; "
             f"curve: `{result['artifacts']['loss_curve']}`{extra}.", ""]
    markdown = "\n".join(lines)
    write_private(storage.join(out, "summary.md"), markdown)
    create_markdown_artifact(markdown, key=kind, description=title)
    get_run_logger().info("%s: %s steps, model %s", kind, result["steps"], result["model"])
    trained = result["steps"] > result["resumed_from"]
    stage = kind.replace("-", "_")
    return {**result, "where": where,
            "run": {stage: {"shards_run": int(trained), "shards_skipped": int(not trained), "shards_total": 1}}}
