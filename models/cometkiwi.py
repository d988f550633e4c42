"""COMETKiwi (reference-free COMET) as a QualityEstimator: one score per (source, translation).

spec.name_or_path is a hub id ("Unbabel/wmt22-cometkiwi-da") or a local checkpoint: the .ckpt itself
or the model directory holding checkpoints/model.ckpt next to hparams.yaml.
"""
from __future__ import annotations

import logging
import os
import warnings
from typing import Sequence

from .base import ModelError, ModelSpec, hub_error, resolve_local_path

# Lightning announces devices, tips and dataloader advice on every predict() call.
QUIET_LOGGERS = ("lightning", "lightning.pytorch", "lightning.fabric", "lightning_fabric",
                 "pytorch_lightning", "comet")
CHECKPOINT_IN_DIR = os.path.join("checkpoints", "model.ckpt")


def import_comet():
    """`import comet`, without its side effects on the host's logging and warnings.

    comet's __init__ calls logging.basicConfig(level=INFO), which would make every library's INFO
    records print in the host process; the root logger is put back as it was.
    """
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*pkg_resources is deprecated.*")  # torchmetrics 0.10
        import comet
    root.handlers[:], root.level = handlers, level
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.ERROR)
    return comet


def checkpoint_path(path: str) -> str:
    if os.path.isdir(path):
        path = os.path.join(path, CHECKPOINT_IN_DIR)
    if not os.path.isfile(path):
        raise ModelError(f"cometkiwi: no COMET checkpoint at {path}")
    return path


class CometKiwiEstimator:
    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.model = None

    def load(self) -> None:
        comet = import_comet()
        if self.spec.is_local:
            ckpt = checkpoint_path(resolve_local_path(self.spec))
        else:
            from huggingface_hub import snapshot_download

            try:  # what comet.download_model does, plus the pinned revision
                ckpt = checkpoint_path(snapshot_download(self.spec.name_or_path, revision=self.spec.revision))
            except Exception as exc:
                raise hub_error(self.spec, exc) from exc
        try:
            self.model = comet.load_from_checkpoint(ckpt)
        except Exception as exc:
            raise ModelError(f"cometkiwi: cannot load COMET checkpoint {ckpt}: {exc}") from exc
        self.model.eval()

    def prepare(self, sources: Sequence[str], translations: Sequence[str]) -> list[dict[str, str]]:
        if len(sources) != len(translations):
            raise ValueError(f"cometkiwi: {len(sources)} sources but {len(translations)} translations")
        return [{"src": src, "mt": mt} for src, mt in zip(sources, translations)]

    def predict(self, batch: list[dict[str, str]]) -> list[float]:
        if not batch:
            return []
        device = self.spec.device
        on_gpu = device.startswith("cuda")
        # One device at most: with gpus > 1 comet starts DDP, whose other ranks call exit().
        # num_workers=0: Dask worker processes are daemonic and may not start DataLoader workers.
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"(pytorch_)?lightning")
            output = self.model.predict(
                batch, batch_size=self.spec.option("batch_size", 32), gpus=1 if on_gpu else 0,
                devices=[int(device.partition(":")[2] or 0)] if on_gpu else None,
                progress_bar=False, num_workers=0)
        return [float(score) for score in output.scores]
