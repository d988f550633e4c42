"""COMETKiwi (reference-free COMET) as a QualityEstimator: one score per (source, translation).

spec.name_or_path is a hub id ("Unbabel/wmt22-cometkiwi-da") or a local checkpoint: the .ckpt itself
or the model directory holding checkpoints/model.ckpt next to hparams.yaml. Its options are
CometKiwiOptions, which FilterOptions.qe_spec() fills (the defaults are FilterOptions').
"""
from __future__ import annotations

import logging
import os
import warnings
from typing import Literal, Sequence

from xmdata.runtime.params import Params
from xmdata.models.token_batches import batch_capacity, filled, length_sorted_batches

from .base import ModelError, ModelSpec, hub_error, resolve_local_path
from .oom_backoff import FAILED, BatchSizes, is_out_of_memory, report, run_with_backoff

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


# Lightning's precision per --qe-precision. For half types the weights are also cast (halving their
# memory, which is what lets COMETKiwi-XXL fit on one GPU) and autocast runs the forward: comet
# computes its layer mix in float32, so "true" half precision alone mixes dtypes and fails.
PRECISIONS = {"float32": "32-true", "bfloat16": "bf16-mixed", "float16": "16-mixed"}


class CometKiwiOptions(Params):
    """How the estimator batches and computes; no defaults here (FilterOptions' qe_* fields hold them)."""
    batch_size: int  # at most this many pairs per forward
    batch_tokens: int  # and at most this many tokens (a forward holds pairs of one length)
    precision: Literal["float32", "bfloat16", "float16"]


class CometKiwiEstimator:
    """One model and one Lightning Trainer per process, reused by every predict() (comet's own
    predict builds a Trainer, its connectors and loops on every call)."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.options = spec.typed_options(CometKiwiOptions)
        self.model = None
        self.trainer = None

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
        if self.options.precision != "float32":
            import torch

            self.model.to(getattr(torch, self.options.precision))
        self.model.eval()
        self.trainer = self.build_trainer()

    def build_trainer(self):
        import pytorch_lightning

        device = self.spec.device
        on_gpu = device.startswith("cuda")
        # One device at most: with several, comet starts DDP, whose other ranks call exit().
        return pytorch_lightning.Trainer(
            accelerator="gpu" if on_gpu else "cpu", devices=[int(device.partition(":")[2] or 0)] if on_gpu else 1,
            precision=PRECISIONS[self.options.precision], logger=False,
            enable_progress_bar=False, enable_model_summary=False, enable_checkpointing=False)

    def prepare(self, sources: Sequence[str], translations: Sequence[str]) -> list[dict[str, str]]:
        if len(sources) != len(translations):
            raise ValueError(f"cometkiwi: {len(sources)} sources but {len(translations)} translations")
        return [{"src": src, "mt": mt} for src, mt in zip(sources, translations)]

    def token_lengths(self, batch: list[dict[str, str]]) -> list[int]:
        """Subword tokens of translation + source, the two segments the encoder reads together."""
        # Each distinct text once: a source comes back with every one of its candidates.
        texts = list(dict.fromkeys(text for pair in batch for text in (pair["mt"], pair["src"])))
        ids = self.model.encoder.tokenizer(texts, add_special_tokens=False, return_attention_mask=False)["input_ids"]
        length = {text: len(row) for text, row in zip(texts, ids)}
        return [length[pair["mt"]] + length[pair["src"]] + 4 for pair in batch]  # <s> mt </s></s> src </s>

    def predict(self, batch: list[dict[str, str]], sizes: BatchSizes | None = None) -> list[float | None]:
        """One score per pair, in input order; pairs run in batches of one length and one size
        under the token budget (token_batches.py).
        None for a pair that runs out of memory even alone (on GPU: batches are halved first);
        `sizes` gets the batches that ran out (their halves' scores may differ in the last digits)."""
        if not batch:
            return []
        lengths = self.token_lengths(batch)
        batches = length_sorted_batches(lengths, self.options.batch_tokens, max_items=self.options.batch_size)
        groups = [[batch[i] for i in indices] for indices in batches]
        capacities = [batch_capacity(lengths[indices[0]], self.options.batch_tokens, max_items=self.options.batch_size)
                      for indices in batches]
        try:  # every group filled to its length's capacity: one shape per length (token_batches.py)
            full = [filled(group, size) for group, size in zip(groups, capacities)]
            outputs = [scores[:len(group)] for group, scores in zip(groups, self.score_groups(full))]
        except Exception as exc:
            if not is_out_of_memory(exc):
                raise
            outputs = None
        if outputs is None:  # batch by batch now, halving those that still do not fit
            sizes = sizes if sizes is not None else BatchSizes()
            outputs = [run_with_backoff(group, lambda part: self.score_groups([part])[0], sizes, fill_to=size)
                       for group, size in zip(groups, capacities)]
            report("cometkiwi", sizes)
        scores: list[float | None] = [None] * len(batch)
        for indices, group_scores in zip(batches, outputs):
            for index, score in zip(indices, group_scores):
                scores[index] = None if score is FAILED else score
        return scores

    def score_groups(self, groups: list[list[dict[str, str]]]) -> list[list[float]]:
        """Scores per group, each group one forward, all through the one Trainer."""
        from torch.utils.data import DataLoader

        # Each item is a whole batch (batch_size=None: no automatic batching), so that Lightning's
        # sampler wrapping keeps our batches. num_workers=0: Dask workers may not start DataLoader workers.
        loader = DataLoader(groups, batch_size=None, collate_fn=self.model.prepare_for_inference, num_workers=0)
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", module=r"(pytorch_)?lightning")
            outputs = self.trainer.predict(self.model, dataloaders=loader, return_predictions=True)
        return [[float(score) for score in output["scores"].float().tolist()] for output in outputs]
