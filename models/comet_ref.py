"""A reference-based COMET (a RegressionMetric such as Unbabel/wmt22-comet-da) as MBR's utility: each
sentence embedded once, then every (candidate, pseudo-reference) pair scored from the embeddings, as
unbabel-comet's `comet-mbr` does (comet/cli/mbr.py: `build_embeddings`, then `model.estimate(src, mt,
ref)` per pair). Public methods of comet only: `encoder.prepare_sample`, `get_sentence_embedding`,
`estimate`.

spec.name_or_path is a hub id or a local checkpoint (the .ckpt, or the folder holding
checkpoints/model.ckpt beside hparams.yaml), found and cached as COMETKiwi's (cometkiwi.py); it runs
where COMETKiwi runs (filters.qe_device) with its batch size and precision.
"""
from __future__ import annotations

import os
from typing import Literal, Sequence

from xmdata.runtime.params import Params

from .base import ModelError, ModelSpec, hub_error, resolve_local_path
from .cometkiwi import CHECKPOINT_IN_DIR, checkpoint_path, import_comet

REFERENCE_BASED = "regression_metric"  # comet's class_identifier of a reference-based RegressionMetric


class CometRefOptions(Params):
    """No defaults here: FilterOptions' qe_* fields hold them (mbr_options.mbr_spec)."""
    batch_size: int  # sentences per encoder forward
    precision: Literal["float32", "bfloat16", "float16"]


def check_reference_based(spec: ModelSpec) -> None:
    """SPEC names a reference-based COMET, said before any weights load: a local checkpoint's
    hparams.yaml (two folders up from the .ckpt, where comet's load_from_checkpoint reads its
    class_identifier), or a hub id's when the hub cache holds it (else its load says what is missing)."""
    if not spec.is_local:
        from huggingface_hub import try_to_load_from_cache

        try:
            found = try_to_load_from_cache(spec.name_or_path, "hparams.yaml", revision=spec.revision)
        except ValueError:  # not a repository id: its load says so, as a model error
            found = None
        if isinstance(found, str):
            _reference_based(found, spec.name_or_path)
        return
    path = resolve_local_path(spec)
    try:
        ckpt = checkpoint_path(path)
    except ModelError:
        raise ModelError(f"mbr_metric {path}: no COMET checkpoint there (a .ckpt, or a folder with "
                         f"{CHECKPOINT_IN_DIR} beside hparams.yaml)") from None
    _reference_based(os.path.join(os.path.dirname(os.path.dirname(ckpt)), "hparams.yaml"), path)


def _reference_based(hparams: str, name: str) -> None:
    import yaml

    try:
        with open(hparams, encoding="utf-8") as handle:
            identifier = (yaml.safe_load(handle) or {}).get("class_identifier")
    except (OSError, yaml.YAMLError) as exc:
        raise ModelError(f"mbr_metric {name}: no readable hparams.yaml ({exc})") from None
    if identifier != REFERENCE_BASED:
        raise ModelError(f"mbr_metric {name}: a {identifier} COMET, not a reference-based one ({REFERENCE_BASED}, "
                         "e.g. Unbabel/wmt22-comet-da)")


class CometReferenceScorer:
    """load, embed (sentences -> vectors), score (src, mt, ref vectors -> utilities)."""

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.options = spec.typed_options(CometRefOptions)
        self.model = None

    def load(self) -> None:
        comet = import_comet()
        if self.spec.is_local:
            check_reference_based(self.spec)
            ckpt = checkpoint_path(resolve_local_path(self.spec))
        else:
            from huggingface_hub import snapshot_download

            try:
                ckpt = checkpoint_path(snapshot_download(self.spec.name_or_path, revision=self.spec.revision))
            except Exception as exc:
                raise hub_error(self.spec, exc) from exc
        try:
            model = comet.load_from_checkpoint(ckpt)
        except Exception as exc:
            raise ModelError(f"comet: cannot load COMET checkpoint {ckpt}: {exc}") from exc
        from comet.models import RegressionMetric

        if not isinstance(model, RegressionMetric):  # comet-mbr's own check
            raise ModelError(f"mbr_metric {self.spec.name_or_path}: a {type(model).__name__}, not a reference-based "
                             "COMET (RegressionMetric)")
        import torch

        if self.options.precision != "float32":
            model.to(getattr(torch, self.options.precision))
        self.model = model.to(self.spec.device).eval()

    def embed(self, texts: Sequence[str]):
        """One sentence embedding per text (a tensor [len(texts), hidden]), in batches of batch_size."""
        import torch

        parts = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.options.batch_size):
                batch = self.model.encoder.prepare_sample(list(texts[start:start + self.options.batch_size]))
                parts.append(self.model.get_sentence_embedding(batch["input_ids"].to(self.model.device),
                                                               batch["attention_mask"].to(self.model.device)))
        return torch.vstack(parts)

    def score(self, sources, translations, references) -> list[float]:
        """COMET of each row's translation against its reference, from embeddings [n, hidden] each."""
        import torch

        with torch.inference_mode():
            return [float(s) for s in self.model.estimate(sources, translations, references).score.float().tolist()]
