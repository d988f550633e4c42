"""What both training flows do once their arguments are in: check, lock, place and train
(`train_and_report`), then publish, when the run ends, summary.md in the run folder, the same as a
Prefect artifact, a log line, and the run's record in the shape every command reports (one "shard":
trained, or skipped when the checkpoint already held every step)."""
from __future__ import annotations

from functools import partial
from typing import Callable

from prefect import get_run_logger
from prefect.artifacts import create_markdown_artifact

from xmdata.runtime import storage
from xmdata.runtime.folder_lock import one_writer
from xmdata.runtime.owner_only import write_private
from xmdata.tasks.train.placement import run_placed
from xmdata.tasks.train.run_folder import train_in_run_folder


def train_and_report(kind: str, title: str, release: str, out: str, params, check: Callable, train: Callable,
                     checked: bool, report_eval: bool = False) -> dict:
    """Refuse what cannot train before anything is written (`check(release, params)`: a missing table,
    no pairs, no model; skipped when the caller checked), then, as OUT's one writer, `train` (or resume)
    where the model's device is, and report. The check's data is made once: the training takes what it
    read (or, after the command line's check, reads the release itself). `title`: what trains, formatted
    with `params` and `release` once trained; `report_eval`: the summary points to the evaluation folder."""
    release, out = storage.absolute(release), storage.absolute(out)
    data = None if checked else check(release, params)
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        result, where = run_placed(train_in_run_folder, params.device, partial(train, data=data), release, params, out)
        extra = f"; evaluation: `{storage.join(out, 'eval')}`" if report_eval else ""
        return report_training(kind, title.format(params=params, release=release), out, result, where, extra=extra)


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
