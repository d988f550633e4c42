"""GPU figures of the scoring bench (run by bench.scoring when CUDA is available): the
xlm-roberta-large-ViT-H-14 shape with random weights under bf16 autocast.

Printed: bare encode_image + encode_text pairs/s on pre-decoded tensors already on the GPU, and
the scoring stage's pairs/s in this process (JPEG decoding in the loader's threads, preprocess,
host-to-device copies, scores; no Dask or Prefect — bench.scoring's P1 measures those on CPU),
each with its share of the GPU's dense bf16 ceiling. FLOPs per pair are counted by torch's
FlopCounterMode on one pair (matmuls and attention; elementwise work is not counted).
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa

PAIRS = 4096
BATCH = 256
# Dense bf16 tensor-core peaks from NVIDIA's data sheets (SXM parts), TFLOP/s.
PEAK_BF16_TFLOPS = {"H200": 989.4, "H100": 989.4, "A100": 312.0}
XLMR_LARGE = dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16, intermediate_size=4096,
                  vocab_size=250_002, max_position_embeddings=514, type_vocab_size=1, layer_norm_eps=1e-5,
                  pad_token_id=1, bos_token_id=0, eos_token_id=2)


def xlmr_large_vit_h14(folder: Path, tokenizer_dir: Path, text_overrides: dict | None = None) -> str:
    """open_clip's xlm-roberta-large-ViT-H-14 config as a local model dir, its text tower an XLM-R
    large config beside a small local tokenizer: the real shapes, no hub, no weights (random init)."""
    import open_clip
    from transformers import XLMRobertaConfig

    text_dir = folder / "xlm-roberta-large"
    shutil.copytree(tokenizer_dir, text_dir, dirs_exist_ok=True)
    XLMRobertaConfig(**{**XLMR_LARGE, **(text_overrides or {})}).save_pretrained(text_dir)
    config = open_clip.get_model_config("xlm-roberta-large-ViT-H-14")
    config["text_cfg"].update(hf_model_name=str(text_dir), hf_tokenizer_name=str(text_dir))
    (folder / "bench-xlm-roberta-large-ViT-H-14.json").write_text(json.dumps(config, indent=2))
    return str(folder)


def flops_per_pair(model, pixels, tokens) -> float:
    """With grad enabled: under inference mode nn.MultiheadAttention takes a fused fast path whose
    projections FlopCounterMode does not see (a third of ViT-H-14's FLOPs). The math is the same."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    device = model.device
    with torch.enable_grad(), FlopCounterMode(display=False) as counter:
        model.model.encode_image(pixels[:1].to(device))
        model.model.encode_text(tokens[:1].to(device))
    return float(counter.get_total_flops())


def bare_pairs_per_second(model, pixels, tokens, batches: int) -> float:
    pixels, tokens = pixels.to(model.device), tokens.to(model.device)  # pre-decoded, already on the device
    model.predict((pixels, tokens))  # warm-up: kernels, autotuning, allocator; returns synchronised
    started = time.perf_counter()
    for _ in range(batches):
        model.predict((pixels, tokens))  # returns numpy: each call waits for the device
    return batches * len(pixels) / (time.perf_counter() - started)


def stage_pairs_per_second(spec, root: Path, paths: list[str], batch_size: int) -> float:
    from xmdata.tasks.scoring.score import clip_score_stage

    texts = [f"photo {i}: a red bicycle by a blue house in the evening light" for i in range(len(paths))]
    table = pa.table({"id": [f"p{i:05d}" for i in range(len(paths))], "image_path": paths, "text": texts})
    stage = clip_score_stage(spec, str(root), batch_size=batch_size)
    stage.fn(table.slice(0, batch_size), stage.params)  # warm-up
    started = time.perf_counter()
    kept, _ = stage.fn(table, stage.params)
    seconds = time.perf_counter() - started
    assert kept.column("status").to_pylist().count("ok") == len(paths)
    return len(paths) / seconds


def peak_flops(device_name: str) -> float | None:
    if os.environ.get("XMDATA_PEAK_BF16_TFLOPS"):
        return 1e12 * float(os.environ["XMDATA_PEAK_BF16_TFLOPS"])
    return next((1e12 * v for k, v in PEAK_BF16_TFLOPS.items() if k in device_name), None)


def measure(spec, root: Path, paths: list[str], batch_size: int, device_name: str) -> dict:
    """Bare and stage pairs/s of one model spec, with FLOP shares when the device's peak is known."""
    from PIL import Image

    from xmdata.models.registry import get_model

    model = get_model("clip_scorer", spec)
    pixels = model.stack_pixels([model.preprocess(Image.open(root / p).convert("RGB"))
                                 for p in paths[:batch_size]])
    tokens = model.prepare([], [f"a photo number {i} of a street" for i in range(batch_size)])[1]
    flops = flops_per_pair(model, pixels, tokens)
    bare = bare_pairs_per_second(model, pixels, tokens, batches=max(1, len(paths) // batch_size))
    stage = stage_pairs_per_second(spec, root, paths, batch_size)
    peak = peak_flops(device_name)
    share = {k: (round(v * flops / peak, 3) if peak else None) for k, v in (("bare", bare), ("stage", stage))}
    return {"device": device_name, "gflops_per_pair": round(flops / 1e9, 1), "bare_pairs_s": round(bare, 1),
            "stage_pairs_s": round(stage, 1), "bf16_peak_share": share}


def main(root: Path) -> dict:
    import torch

    from bench.scoring_inputs import make_images
    from xmdata.flows.score import clip_model_spec

    name = torch.cuda.get_device_name()
    model_dir = xlmr_large_vit_h14(root / "xlmr-vit-h-14", root / "xlmr")  # tokenizer built by bench.scoring
    paths = make_images(root / "gpu-images", PAIRS)
    figures = measure(clip_model_spec(model_dir, None, "cuda", "bfloat16"), root, paths, BATCH, name)
    share = figures["bf16_peak_share"]
    print(f"  xlm-roberta-large-ViT-H-14 (random), bf16 autocast, batch {BATCH}, {name}: "
          f"{figures['gflops_per_pair']} GFLOP per pair")
    print(f"    bare  {figures['bare_pairs_s']:8.1f} images/s   share of bf16 peak {share['bare']}")
    print(f"    stage {figures['stage_pairs_s']:8.1f} images/s   share of bf16 peak {share['stage']}"
          f"   (JPEG decoding on {os.cpu_count()} cores included)")
    return figures
