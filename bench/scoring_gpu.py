"""GPU figures of the scoring bench (run by bench.scoring when CUDA is available): the
xlm-roberta-large-ViT-H-14 shape with random weights under bf16 autocast.

Printed: bare encode_image + encode_text pairs/s on pre-decoded tensors already on the GPU, and
the scoring stage's pairs/s in this process (JPEG decoding in the loader's threads, preprocess,
host-to-device copies, scores; no Dask or Prefect — bench.scoring's P1 measures those on CPU),
each with its share of the GPU's dense bf16 ceiling: the data sheet's peak, and the rate of an
8192×8192×8192 bf16 matrix product measured in the same run. FLOPs per pair are counted by torch's
FlopCounterMode on one pair (matmuls and attention; elementwise work is not counted). While the
stage runs, NVML's utilization.gpu (share of time a kernel was running) is sampled every 20 ms.
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


def stage_pairs_per_second(spec, root: Path, paths: list[str], batch_size: int, busy=None) -> float:
    from xmdata.tasks.scoring.score import clip_score_stage
    from xmdata.tasks.stage_params import ScoringParams

    texts = [f"photo {i}: a red bicycle by a blue house in the evening light" for i in range(len(paths))]
    table = pa.table({"id": [f"p{i:05d}" for i in range(len(paths))], "image_path": paths, "text": texts})
    stage = clip_score_stage(ScoringParams(clip_model=spec.name_or_path, batch_size=batch_size), spec, str(root))
    stage.fn(table.slice(0, batch_size), stage.params)  # warm-up
    with busy if busy is not None else BusySampler(1.0):
        started = time.perf_counter()
        kept, _ = stage.fn(table, stage.params)
        seconds = time.perf_counter() - started
    assert kept.column("status").to_pylist().count("ok") == len(paths)
    return len(paths) / seconds


def matmul_ceiling(size: int = 8192, repeats: int = 10) -> float:
    """FLOP/s of a bf16 size³ matrix product on random data: mean of `repeats` after 3 warm-ups."""
    import torch

    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    for _ in range(3):
        a @ b
    torch.cuda.synchronize()
    started = time.perf_counter()
    for _ in range(repeats):
        a @ b
    torch.cuda.synchronize()
    return 2 * size**3 * repeats / (time.perf_counter() - started)


class BusySampler:
    """Mean of NVML's utilization.gpu samples while the block runs (None without pynvml)."""

    def __init__(self, period_s: float = 0.02):
        self.period_s, self.samples, self._stop = period_s, [], None

    def __enter__(self):
        import threading

        try:
            import pynvml

            pynvml.nvmlInit()
            handle = pynvml.nvmlDeviceGetHandleByIndex(0)
        except Exception:  # no NVML: no figure
            return self
        self._stop = threading.Event()

        def sample():
            while not self._stop.is_set():
                self.samples.append(pynvml.nvmlDeviceGetUtilizationRates(handle).gpu)
                self._stop.wait(self.period_s)

        self._thread = threading.Thread(target=sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc):
        if self._stop is not None:
            self._stop.set()
            self._thread.join()

    @property
    def share(self) -> float | None:
        return round(sum(self.samples) / len(self.samples) / 100, 3) if self.samples else None


def open_clip_spec(model_dir: str, autocast: str = "bfloat16"):
    """The spec `xmdata score` makes for a local dir on cuda."""
    from xmdata.tasks.stage_params import ScoringParams

    return ScoringParams(clip_model=str(Path(model_dir).resolve()), device="cuda", autocast=autocast).spec()


def peak_flops(device_name: str) -> float | None:
    if os.environ.get("XMDATA_PEAK_BF16_TFLOPS"):
        return 1e12 * float(os.environ["XMDATA_PEAK_BF16_TFLOPS"])
    return next((1e12 * v for k, v in PEAK_BF16_TFLOPS.items() if k in device_name), None)


def measure(spec, root: Path, paths: list[str], batch_size: int, device_name: str,
            ceiling: float | None = None) -> dict:
    """Bare (before and after) and stage pairs/s of one model spec, with FLOP shares of the data
    sheet's peak when the device's is known and of `ceiling` (a measured FLOP/s) when given."""
    from PIL import Image

    from xmdata.models.registry import get_model

    model = get_model("clip_scorer", spec)
    pixels = model.stack_pixels([model.preprocess(Image.open(root / p).convert("RGB"))
                                 for p in paths[:batch_size]])
    tokens = model.prepare([], [f"a photo number {i} of a street" for i in range(batch_size)])[1]
    flops = flops_per_pair(model, pixels, tokens)
    batches = max(1, len(paths) // batch_size)
    before = bare_pairs_per_second(model, pixels, tokens, batches)
    busy = BusySampler()
    stage = stage_pairs_per_second(spec, root, paths, batch_size, busy)
    after = bare_pairs_per_second(model, pixels, tokens, batches)
    bare = (before + after) / 2
    peak = peak_flops(device_name)
    share = {k: (round(v * flops / peak, 3) if peak else None) for k, v in (("bare", bare), ("stage", stage))}
    measured = {k: (round(v * flops / ceiling, 3) if ceiling else None) for k, v in (("bare", bare), ("stage", stage))}
    return {"device": device_name, "batch": batch_size, "pairs": len(paths), "gflops_per_pair": round(flops / 1e9, 1),
            "bare_pairs_s": [round(before, 1), round(after, 1)], "stage_pairs_s": round(stage, 1),
            "stage_over_bare": round(stage / bare, 3), "stage_gpu_busy_share": busy.share,
            "busy_samples": len(busy.samples), "bf16_peak_share": share,
            "bf16_matmul_ceiling_tflops": round(ceiling / 1e12, 1) if ceiling else None,
            "bf16_ceiling_share": measured}


def main(root: Path, ceiling: float | None = None, pairs: int = PAIRS, batch_size: int = BATCH) -> dict:
    import torch

    from bench.scoring_inputs import make_images

    name = torch.cuda.get_device_name()
    ceiling = ceiling or matmul_ceiling()
    model_dir = xlmr_large_vit_h14(root / "xlmr-vit-h-14", root / "xlmr")  # tokenizer built by bench.scoring
    paths = make_images(root / "gpu-images", pairs)
    figures = measure(open_clip_spec(model_dir), root, paths, batch_size, name, ceiling)
    report_figures("xlm-roberta-large-ViT-H-14 (random)", figures)
    return figures


def report_figures(label: str, figures: dict) -> None:
    peak, measured = figures["bf16_peak_share"], figures["bf16_ceiling_share"]
    print(f"  {label}, bf16 autocast, batch {figures['batch']}, {figures['pairs']} pairs, {figures['device']}: "
          f"{figures['gflops_per_pair']} GFLOP per pair; bf16 matmul ceiling {figures['bf16_matmul_ceiling_tflops']} TFLOP/s")
    print(f"    bare  {figures['bare_pairs_s']} images/s (before / after the stage)   share of peak {peak['bare']}, "
          f"of the measured ceiling {measured['bare']}")
    print(f"    stage {figures['stage_pairs_s']:8.1f} images/s = {figures['stage_over_bare']} of bare   share of peak "
          f"{peak['stage']}, of the measured ceiling {measured['stage']}; GPU busy {figures['stage_gpu_busy_share']} "
          f"({figures['busy_samples']} NVML samples; JPEG decoding on {os.cpu_count()} cores included)")
