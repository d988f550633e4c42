"""A tiny reference-based COMET: a RegressionMetric shaped like Unbabel/wmt22-comet-da (src, mt and ref
embedded apart, avg pooling, a layer mix, a feed-forward over the six combined features) on the tiny
XLM-R encoder, laid out for comet.load_from_checkpoint; small heads, not the real sizes. MBR's COMET
utility in tests and the demo, as the tiny COMETKiwi is QE's."""
from __future__ import annotations

from pathlib import Path

from .tiny_init import portable_init
from .tiny_xlmr import save_comet_checkpoint


def regression_hparams(encoder: str, hidden_sizes: list[int]) -> dict:
    """RegressionMetric's hyper-parameters as unbabel-comet's defaults give them (its __init__:
    xlm-roberta-large encoder, avg pool, mix layer, hidden_sizes [3072, 1024], Tanh), with ENCODER's
    weights and the feed-forward's HIDDEN_SIZES."""
    return dict(nr_frozen_epochs=0.3, keep_embeddings_frozen=True, optimizer="AdamW", encoder_learning_rate=1e-06,
                learning_rate=1.5e-05, layerwise_decay=0.95, encoder_model="XLM-RoBERTa", pretrained_model=encoder,
                pool="avg", layer="mix", layer_transformation="sparsemax", layer_norm=False, loss="mse",
                dropout=0.1, batch_size=16, hidden_sizes=hidden_sizes, activations="Tanh", final_activation=None,
                load_pretrained_weights=False, local_files_only=True)


def build_tiny_comet_ref(out_dir: Path, xlmr_dir: Path, seed: int) -> Path:
    from .cometkiwi import import_comet

    import_comet()  # first: it also silences what comet's dependencies print on import
    from comet.models import RegressionMetric

    hparams = regression_hparams(str(xlmr_dir), [16])
    model = portable_init(seed, "comet_ref", lambda: RegressionMetric(**hparams))
    return save_comet_checkpoint(out_dir, model, "regression_metric", hparams)
