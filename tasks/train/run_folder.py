"""Where a training run's files live. A local OUT is the run folder itself. An object store has no rename,
no append and no memory-mapped file, and torch, safetensors and transformers write and read local files:
a run bound for a URL works in a local folder keyed by the URL (XMDATA_CACHE/train-runs/), where a
killed run resumes, and when it ends every file is moved up, one PUT each (runtime/atomic.py), the model
card last. A run whose local folder is gone (another machine) first fetches the checkpoint and the loss
log from the store, so a finished run is not trained again."""
from __future__ import annotations

import hashlib
import os
import shutil
from typing import Callable

from xmdata.runtime import storage

RUNS = "train-runs"
FETCHED = ("checkpoint.pt", "artifacts/losses.jsonl")  # what a resume reads (tasks/train/loop.py)
LAST = "model/model_card.json"  # what says a run finished (tasks/train/card.py)


def train_in_run_folder(train: Callable[[str, object, str], dict], release: str, params, out: str) -> dict:
    """train(release, params, run_dir) in OUT's run folder; the summary's paths named under OUT."""
    if not storage.is_url(out):
        return train(release, params, out)
    local = _fetched(out)
    summary = train(release, params, local)
    _move_up(local, out)

    def under_out(path: str) -> str:
        return storage.join(out, *os.path.relpath(path, local).split(os.sep))

    return {**summary, "model": under_out(summary["model"]),
            "artifacts": {name: under_out(path) for name, path in summary["artifacts"].items()}}


def _fetched(out: str) -> str:
    """The local run folder of the URL OUT, holding the store's checkpoint and log when it has none."""
    from xmdata.runtime.owner_only import private_folder, write_private

    from xmdata.runtime.folder_lock import remove_stray_temp_files

    local = private_folder(os.path.join(private_folder(os.path.join(storage.cache_root(), RUNS)),
                                        hashlib.sha256(out.encode()).hexdigest()[:16]))
    remove_stray_temp_files(local)  # a killed run's: never moved up with the rest
    if not os.path.exists(os.path.join(local, FETCHED[0])):
        for name in FETCHED:
            remote = storage.join(out, *name.split("/"))
            if storage.exists(remote):
                write_private(os.path.join(local, *name.split("/")), storage.read_bytes(remote))
    return local


def _move_up(local: str, out: str) -> None:
    from xmdata.runtime.atomic import move_files_atomic

    move_files_atomic(local, out, last=(LAST,))
    shutil.rmtree(local)
