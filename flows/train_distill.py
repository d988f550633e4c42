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
    from functools import partial

    release, out = storage.absolute(release), storage.absolute(out)
    # Before anything is written: a missing table, no pairs, no model. Made once: the training takes
    # what the check read (or, after the command line's check, reads the release itself).
    data = None if checked else check_distill(release, params)
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        result, where = run_placed(train_in_run_folder, params.device, partial(train_distill, data=data), release,
                                   params, out)
        return report_training("train-distill", f"Distillation of {params.model} on {release}", out, result, where)
