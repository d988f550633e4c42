"""Multilingual CLIPScore fine-tuning on a release, as a Prefect flow: refuse what cannot train, train (or
resume) where the model's device is (a GPU worker when the run's cluster has one and the model runs on
CUDA), evaluate the held-out rated pairs before and after, then publish the figures, the loss curve and
the model card as artifacts."""
from __future__ import annotations

from prefect import flow

from xmdata.tasks.train.clipscore import train_clipscore
from xmdata.tasks.train.clipscore_data import check_clipscore
from xmdata.tasks.train.clipscore_params import ClipscoreParams

from .train_report import train_and_report


@flow(name="train-clipscore")
def train_clipscore_flow(release: str, out: str, params: ClipscoreParams, checked: bool = False) -> dict:
    """Fine-tune an open_clip model on RELEASE's captions and human-rated pairs (multilingual CLIPScore §3).

    Args:
        release: a release folder with data/<captions_table>.parquet and data/<ratings_table>.parquet
        out: run folder: checkpoint.pt, artifacts/ (loss log and curve), eval/ (before, after), model/ (with its card)
        params: the model, the two tables, the optimiser, the loss weighting and the loop (epochs, batch,
            accumulation, checkpoints, seed)
        checked: the caller made the run's checks already (the command line does, before any server
            starts): the training reads the release itself, where it runs

    Docs: docs/how-to/train.md; every option: docs/reference/commands.md#train-clipscore.
    """
    return train_and_report("train-clipscore", "CLIPScore fine-tuning of {params.clip_model} on {release}", release,
                            out, params, check_clipscore, train_clipscore, checked, report_eval=True)
