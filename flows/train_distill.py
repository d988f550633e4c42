"""xVLM2Vec self-knowledge distillation on a release, as a Prefect flow: refuse what cannot train, train
(or resume) where the model's device is (a GPU worker when the run's cluster has one and the model
runs on CUDA), then publish the loss curve, the figures and the model card as artifacts."""
from __future__ import annotations

from prefect import flow

from xmdata.runtime import storage
from xmdata.runtime.folder_lock import one_writer
from xmdata.tasks.train.distill import check_distill, train_distill
from xmdata.tasks.train.params import DistillParams
from xmdata.tasks.train.placement import run_placed
from xmdata.tasks.train.run_folder import train_in_run_folder

from .train_report import report_training


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
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        result, where = run_placed(train_in_run_folder, params.device, train_distill, release, params, out)
        return report_training("train-distill", f"Distillation of {params.model} on {release}", out, result, where)
