"""xVLM2Vec self-knowledge distillation on a release, as a Prefect flow: refuse what cannot train, train
(or resume) where the model's device is (a GPU worker when the run's cluster has one and the model
runs on CUDA), then publish the loss curve, the figures and the model card as artifacts."""
from __future__ import annotations

from prefect import flow

from xmdata.tasks.train.distill import check_distill, train_distill
from xmdata.tasks.train.params import DistillParams

from .train_report import train_and_report


@flow(name="train-distill")
def train_distill_flow(release: str, out: str, params: DistillParams, checked: bool = False) -> dict:
    """Distil a multilingual student from a frozen copy of an embedding model on RELEASE's QA translations.
    Docs: docs/how-to/train.md; every option: docs/reference/commands.md#train-distill.

    Args:
        release: a release folder whose data/qa_parallel.parquet holds the QA translations
        out: run folder: checkpoint.pt, artifacts/ (loss log and curve), eval/, model/ (with its card)
        params: the model, the optimiser and the loop (epochs, batch, accumulation, checkpoints, seed)
        checked: the caller made the run's checks already (the command line does, before any server
            starts): the training reads the release itself, where it runs

    Docs: docs/how-to/train.md; every option: docs/reference/commands.md#train-distill.
    """
    return train_and_report("train-distill", "Distillation of {params.model} on {release}", release, out, params,
                            check_distill, train_distill, checked)
