"""xVLM2Vec self-knowledge distillation on a release, as a Prefect flow: refuse what cannot train, train
(or resume) where the model's device is (a GPU worker when the run's cluster has one and the model
runs on CUDA), then publish the loss curve, the figures and the model card as artifacts."""
from __future__ import annotations

import os

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from xmdata.runtime import storage
from xmdata.runtime.owner_only import write_private
from xmdata.tasks.train.distill import check_distill, train_distill
from xmdata.tasks.train.params import DistillParams
from xmdata.tasks.train.placement import run_placed


@flow(name="train-distill")
def train_distill_flow(release: str, out: str, params: DistillParams) -> dict:
    """Distil a multilingual student from a frozen copy of an embedding model on RELEASE's QA translations.
    Docs: docs/how-to/train.md; every option: docs/reference/commands.md#train-distill.

    Args:
        release: a release folder whose data/qa_parallel.parquet holds the QA translations
        out: run folder: checkpoint.pt, artifacts/ (loss log and curve), eval/, model/ (with its card)
        params: the model, the optimiser and the loop (epochs, batch, accumulation, checkpoints, seed)

    Docs: docs/how-to/train.md; every option: docs/reference/commands.md#train-distill.
    """
    release, out = storage.absolute(release), storage.absolute(out)
    check_distill(release, params)  # before anything is written: a missing table, no pairs, no model
    result, where = run_placed(train_distill, params.device, release, params, out)
    figures = result["figures"]
    lines = [f"## Distillation of {params.model} on {release}", "",
             f"{result['steps']} optimizer steps ({result['resumed_from']} resumed from the checkpoint), ran {where}.",
             "", "| figure | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in figures.items()), "",
             f"Model: `{result['model']}`; loss log: `{result['artifacts']['losses']}`; "
             f"curve: `{result['artifacts']['loss_curve']}`.", ""]
    markdown = "\n".join(lines)
    write_private(os.path.join(out, "summary.md"), markdown)
    create_markdown_artifact(markdown, key="train-distill", description=f"distillation on {release}")
    get_run_logger().info("train distill: %s steps, model %s", result["steps"], result["model"])
    trained = result["steps"] > result["resumed_from"]
    return {**result, "where": where,
            "run": {"train_distill": {"shards_run": int(trained), "shards_skipped": int(not trained), "shards_total": 1}}}
