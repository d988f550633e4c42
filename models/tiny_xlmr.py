"""Tiny models on a tiny XLM-R encoder: the encoder itself, a COMETKiwi-shaped checkpoint and a
multilingual CLIP shaped like open_clip's xlm-roberta-*-ViT configs. Built offline, real classes.
"""
from __future__ import annotations

import json
from pathlib import Path

import yaml

from .tiny_corpus import train_sentencepiece
from .tiny_init import portable_init

OPEN_CLIP_NAME = "xmdata-tiny-xlm-roberta-ViT-P16"
OPEN_CLIP_WEIGHTS = "open_clip_model.safetensors"
XLMR_CONTEXT = 32  # the CLIP text context, short so that truncation is easy to test


def build_tiny_xlmr(out_dir: Path, sentences: list[str]) -> Path:
    """Tokenizer and config only: COMET and open_clip take the weights from their own checkpoints."""
    from transformers import XLMRobertaConfig, XLMRobertaTokenizer, XLMRobertaTokenizerFast

    out_dir.mkdir(parents=True, exist_ok=True)
    spm_model = train_sentencepiece(sentences, model_type="unigram", vocab_size=400, hard_vocab_limit=False)
    (out_dir / "sentencepiece.bpe.model").write_bytes(spm_model)
    XLMRobertaTokenizer(str(out_dir / "sentencepiece.bpe.model")).save_pretrained(out_dir)
    # COMET loads XLMRobertaTokenizerFast: save tokenizer.json so it never converts at load time.
    fast = XLMRobertaTokenizerFast.from_pretrained(out_dir)
    fast.save_pretrained(out_dir)
    XLMRobertaConfig(vocab_size=len(fast), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                     intermediate_size=64, max_position_embeddings=514, type_vocab_size=1,
                     pad_token_id=1, bos_token_id=0, eos_token_id=2).save_pretrained(out_dir)
    return out_dir


def build_tiny_cometkiwi(out_dir: Path, xlmr_dir: Path, seed: int) -> Path:
    """A UnifiedMetric shaped like wmt22-cometkiwi-da (mt+src input, sparsemax layer mix) on the tiny
    encoder, laid out for comet.load_from_checkpoint; small heads, not the real sizes."""
    from .cometkiwi import import_comet

    import_comet()  # first: it also silences what comet's dependencies print on import
    from comet.models import UnifiedMetric

    hparams = dict(
        nr_frozen_epochs=0.3, keep_embeddings_frozen=True, optimizer="AdamW", encoder_learning_rate=1e-06,
        learning_rate=1.5e-05, layerwise_decay=0.95, encoder_model="XLM-RoBERTa",
        pretrained_model=str(xlmr_dir), sent_layer="mix", layer_transformation="sparsemax", layer_norm=True,
        word_layer=1, loss="mse", dropout=0.1, batch_size=16, hidden_sizes=[16], activations="Tanh",
        final_activation=None, input_segments=["mt", "src"], word_level_training=False,
        load_pretrained_weights=False, local_files_only=True)
    model = portable_init(seed, "cometkiwi", lambda: UnifiedMetric(**hparams))
    return save_comet_checkpoint(out_dir, model, "unified_metric", hparams)


def save_comet_checkpoint(out_dir: Path, model, class_identifier: str, hparams: dict) -> Path:
    """MODEL laid out for comet.load_from_checkpoint: checkpoints/model.ckpt and hparams.yaml."""
    import pytorch_lightning
    import torch

    (out_dir / "checkpoints").mkdir(parents=True, exist_ok=True)
    torch.save({"state_dict": model.state_dict(), "hyper_parameters": dict(model.hparams),
                "pytorch-lightning_version": pytorch_lightning.__version__},
               out_dir / "checkpoints" / "model.ckpt")
    # comet reads only class_identifier here; the hyper-parameters come from the checkpoint.
    (out_dir / "hparams.yaml").write_text(yaml.safe_dump({"class_identifier": class_identifier, **hparams}))
    return out_dir


def build_tiny_open_clip(out_dir: Path, xlmr_dir: Path, seed: int) -> Path:
    """A width-32, one-layer ViT with the XLM-R text tower, saved as config JSON + weights."""
    import open_clip
    from safetensors.torch import save_file

    out_dir.mkdir(parents=True, exist_ok=True)
    config = {
        "embed_dim": 16,
        "vision_cfg": {"image_size": 32, "patch_size": 16, "width": 32, "head_width": 16, "layers": 1},
        "text_cfg": {"hf_model_name": str(xlmr_dir), "hf_tokenizer_name": str(xlmr_dir),
                     "hf_pooler_type": "mean_pooler", "context_length": XLMR_CONTEXT},
    }
    (out_dir / f"{OPEN_CLIP_NAME}.json").write_text(json.dumps(config, indent=2))
    open_clip.add_model_config(out_dir)
    model = portable_init(seed, "open_clip", lambda: open_clip.create_model(OPEN_CLIP_NAME, pretrained_text=False))
    save_file(model.state_dict(), str(out_dir / OPEN_CLIP_WEIGHTS))
    return out_dir
