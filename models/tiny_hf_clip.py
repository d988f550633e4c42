"""A tiny Hugging Face CLIPModel (get_text_features / get_image_features) with the tiny XLM-R
tokenizer and a 32-pixel CLIPImageProcessor: what the `hf` embedder loads, offline."""
from __future__ import annotations

from pathlib import Path

from .tiny_init import portable_init


def build_tiny_hf_clip(out_dir: Path, xlmr_dir: Path, seed: int) -> Path:
    from transformers import AutoTokenizer, CLIPConfig, CLIPImageProcessor, CLIPModel

    out_dir.mkdir(parents=True, exist_ok=True)
    tokenizer = AutoTokenizer.from_pretrained(xlmr_dir)
    config = CLIPConfig(
        text_config={"vocab_size": len(tokenizer), "hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1,
                     "num_attention_heads": 2, "max_position_embeddings": 32, "eos_token_id": tokenizer.eos_token_id,
                     "pad_token_id": tokenizer.pad_token_id, "bos_token_id": tokenizer.bos_token_id},
        vision_config={"hidden_size": 16, "intermediate_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2,
                       "image_size": 32, "patch_size": 16},
        projection_dim=8)
    portable_init(seed, "hf_clip", lambda: CLIPModel(config)).save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}).save_pretrained(out_dir)
    return out_dir
