"""Multilingual CLIPScore fine-tuning on a release, as a Prefect flow: refuse what cannot train, train (or
resume) where the model's device is (a GPU worker when the run's cluster has one and the model runs on
CUDA), evaluate the held-out rated pairs before and after, then publish the figures, the loss curve and
the model card as artifacts."""
from __future__ import annotations

from prefect import flow

from xmdata.runtime import storage
from xmdata.runtime.folder_lock import one_writer
from xmdata.tasks.train.clipscore import train_clipscore
from xmdata.tasks.train.clipscore_data import check_clipscore
from xmdata.tasks.train.clipscore_params import ClipscoreParams
from xmdata.tasks.train.placement import run_placed
from xmdata.tasks.train.run_folder import train_in_run_folder

from .train_report import report_training


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
    from functools import partial

    release, out = storage.absolute(release), storage.absolute(out)
    # Before anything is written: a missing table, no pairs, no model. Made once: the training takes
    # what the check read (or, after the command line's check, reads the release itself).
    data = None if checked else check_clipscore(release, params)
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        result, where = run_placed(train_in_run_folder, params.device, partial(train_clipscore, data=data), release,
                                   params, out)
        return report_training("train-clipscore", f"CLIPScore fine-tuning of {params.clip_model} on {release}", out,
                               result, where, extra=f"; evaluation: `{storage.join(out, 'eval')}`")
