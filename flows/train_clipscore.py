"""Multilingual CLIPScore fine-tuning on a release, as a Prefect flow: refuse what cannot train, train (or
resume) where the model's device is (a GPU worker when the run's cluster has one and the model runs on
CUDA), evaluate the held-out rated pairs before and after, then publish the figures, the loss curve and
the model card as artifacts."""
from __future__ import annotations

import os

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact

from xmdata.runtime import storage
from xmdata.runtime.owner_only import write_private
from xmdata.tasks.train.clipscore import check_clipscore, train_clipscore
from xmdata.tasks.train.clipscore_params import ClipscoreParams
from xmdata.tasks.train.placement import run_placed


@flow(name="train-clipscore")
def train_clipscore_flow(release: str, out: str, params: ClipscoreParams) -> dict:
    """Fine-tune an open_clip model on RELEASE's captions and human-rated pairs (multilingual CLIPScore §3).

    Args:
        release: a release folder with data/<captions_table>.parquet and data/<ratings_table>.parquet
        out: run folder: checkpoint.pt, artifacts/ (loss log and curve), eval/ (before, after), model/ (with its card)
        params: the model, the two tables, the optimiser, the loss weighting and the loop (epochs, batch,
            accumulation, checkpoints, seed)

    Docs: docs/how-to/train.md; every option: docs/reference/commands.md#train-clipscore.
    """
    release, out = storage.absolute(release), storage.absolute(out)
    check_clipscore(release, params)  # before anything is written: a missing table, no pairs, no model
    result, where = run_placed(train_clipscore, params.device, release, params, out)
    figures = result["figures"]
    lines = [f"## CLIPScore fine-tuning of {params.clip_model} on {release}", "",
             f"{result['steps']} optimizer steps ({result['resumed_from']} resumed from the checkpoint), ran {where}.",
             "", "| figure | value |", "|---|---|", *(f"| {k} | {v} |" for k, v in figures.items()), "",
             f"Model: `{result['model']}`; loss log: `{result['artifacts']['losses']}`; "
             f"curve: `{result['artifacts']['loss_curve']}`; evaluation: `{os.path.join(out, 'eval')}`.", ""]
    markdown = "\n".join(lines)
    write_private(os.path.join(out, "summary.md"), markdown)
    create_markdown_artifact(markdown, key="train-clipscore", description=f"CLIPScore fine-tuning on {release}")
    get_run_logger().info("train clipscore: %s steps, model %s", result["steps"], result["model"])
    trained = result["steps"] > result["resumed_from"]
    return {**result, "where": where,
            "run": {"train_clipscore": {"shards_run": int(trained), "shards_skipped": int(not trained),
                                        "shards_total": 1}}}
