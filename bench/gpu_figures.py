"""The GPU figures of issue 47 in one run (`python -m bench.gpu_figures OUT.json`), each section on
its own, so that one failing does not lose the others; what was measured is written to OUT.json
after every section, and printed.

1. bf16 matrix-product ceiling (8192³, random data) of this GPU, measured here.
2. Scoring: xlm-roberta-large-ViT-H-14 shape (random weights, bf16 autocast), bare vs the scoring
   stage (bench.scoring_gpu), with FLOP shares and NVML's GPU busy share during the stage; then
   the ViT-B-32 shape the same way (clip-retrieval publishes ~2,500 images/s on one A100).
3. One row's embedding in different padded batches of the ViT-H-14 shape (bf16), and the largest
   power-of-two bare batch that fits up to 2048.
4. Translation: the M2M100-1.2B shape (random weights, bf16) through transformers' generate(),
   100 beams / 25 candidates, fixed-length decoding; CTranslate2 only if its CUDA build can load.

Nothing here is the flow on Dask/Prefect: "stage" is the function one Dask task runs on its shard.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

SECTIONS: list = []


def section(fn):
    SECTIONS.append(fn)
    return fn


@section
def environment(root: Path, figures: dict) -> dict:
    import numpy
    import torch
    import transformers

    props = torch.cuda.get_device_properties(0)
    return {"gpu": torch.cuda.get_device_name(), "memory_gib": round(props.total_memory / 2**30, 1),
            "sms": props.multi_processor_count, "torch": torch.__version__, "cuda": torch.version.cuda,
            "transformers": transformers.__version__, "numpy": numpy.__version__,
            "python": sys.version.split()[0], "cpus": os.cpu_count(),
            "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS"), "affinity": len(os.sched_getaffinity(0))}


@section
def ceiling(root: Path, figures: dict) -> dict:
    from bench.scoring_gpu import matmul_ceiling

    return {"bf16_matmul_8192_tflops": round(matmul_ceiling() / 1e12, 1)}


def ceiling_flops(figures: dict) -> float | None:
    tflops = (figures.get("ceiling") or {}).get("bf16_matmul_8192_tflops")
    return tflops * 1e12 if tflops else None


@section
def scoring_vit_h14(root: Path, figures: dict) -> dict:
    from bench.scoring_gpu import main as scoring_main
    from xmdata.models.tiny_corpus import generate_sentences
    from xmdata.models.tiny_xlmr import build_tiny_xlmr

    from xmdata.runtime.settings import GPU_TINY

    if GPU_TINY.get():  # built beforehand: build_tiny_xlmr needs transformers<5
        shutil.copytree(Path(GPU_TINY.get()) / "xlm-roberta", root / "xlmr")
    else:
        build_tiny_xlmr(root / "xlmr", generate_sentences(seed=0))  # the tokenizer the shape's text tower uses
    return scoring_main(root, ceiling_flops(figures), pairs=int(os.environ.get("GPU_BENCH_PAIRS", 4096)))


@section
def scoring_vit_b32(root: Path, figures: dict) -> dict:
    import torch

    from bench.scoring_gpu import measure, open_clip_spec, report_figures
    from bench.scoring_inputs import make_images, random_vit_b_32

    model_dir = random_vit_b_32(root / "vit-b-32")
    paths = make_images(root / "gpu-images", int(os.environ.get("GPU_BENCH_PAIRS", 4096)))
    result = measure(open_clip_spec(model_dir), root, paths, 256, torch.cuda.get_device_name(), ceiling_flops(figures))
    report_figures("ViT-B-32 (random)", result)
    return result


@section
def padding_and_batch_sizes(root: Path, figures: dict) -> dict:
    import numpy as np
    import torch

    from bench.scoring_gpu import open_clip_spec
    from xmdata.models.registry import get_model

    model = get_model("clip_scorer", open_clip_spec(str(root / "xlmr-vit-h-14")))
    torch.manual_seed(0)
    pixels = torch.randn(256, 3, 224, 224).to(model.dtype)
    full = model.predict((pixels, None), pad_to=256)[0]
    alone = model.predict((pixels[7:8], None), pad_to=256)[0][0]
    others = model.predict((torch.cat([pixels[100:200], pixels[7:8]]), None), pad_to=256)[0][-1]
    unpadded = model.predict((pixels[7:8], None))[0][0]
    out = {"same_row_padded_max_abs_diff": float(max(np.abs(alone - full[7]).max(), np.abs(others - full[7]).max())),
           "same_row_unpadded_batch1_vs_256_max_abs_diff": float(np.abs(unpadded - full[7]).max())}
    fits = {}
    for batch in (256, 512, 1024, 2048):
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        try:
            big = pixels.repeat(batch // 256, 1, 1, 1)
            model.predict((big, None))
            torch.cuda.synchronize()
            fits[batch] = round(torch.cuda.max_memory_allocated() / 2**30, 1)
        except torch.cuda.OutOfMemoryError:
            fits[batch] = "out of memory"
            break
    out["image_batch_peak_gib"] = fits
    print(f"  ViT-H-14 bf16 image embedding of one row: padded batches differ by {out['same_row_padded_max_abs_diff']:.2e}, "
          f"unpadded batch of 1 vs 256 by {out['same_row_unpadded_batch1_vs_256_max_abs_diff']:.2e}; "
          f"image batches (peak GiB): {fits}")
    return out


M2M100_1_2B = dict(d_model=1024, encoder_layers=24, decoder_layers=24, encoder_attention_heads=16,
                   decoder_attention_heads=16, encoder_ffn_dim=8192, decoder_ffn_dim=8192,
                   vocab_size=128_112, max_position_embeddings=1024, pad_token_id=1, bos_token_id=0,
                   eos_token_id=2, decoder_start_token_id=2)


@section
def translation_m2m100_1_2b(root: Path, figures: dict) -> dict:
    import torch
    from transformers import M2M100Config, M2M100ForConditionalGeneration

    torch.manual_seed(0)
    with torch.device("cuda"):
        model = M2M100ForConditionalGeneration(M2M100Config(**M2M100_1_2B)).to(torch.bfloat16).eval()
    params = sum(p.numel() for p in model.parameters())
    beams, candidates, source_tokens, new_tokens = 100, 25, 24, 32
    results = {"params_b": round(params / 1e9, 2), "beams": beams, "candidates": candidates,
               "source_tokens": source_tokens, "new_tokens": new_tokens, "runs": []}
    for sentences in (4, 16):
        ids = torch.randint(4, 128_000, (sentences, source_tokens), device="cuda")
        ids[:, 0] = 128_022  # a language token's place (__en__ in the real vocabulary)
        ids[:, -1] = 2

        def generate():
            with torch.inference_mode():
                out = model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), num_beams=beams,
                                     num_return_sequences=candidates, max_new_tokens=new_tokens,
                                     min_new_tokens=new_tokens, forced_bos_token_id=128_028,
                                     early_stopping=True, output_scores=True, return_dict_in_generate=True)
            torch.cuda.synchronize()
            return out

        generate()  # warm-up
        torch.cuda.reset_peak_memory_stats()
        started = time.perf_counter()
        out = generate()
        seconds = time.perf_counter() - started
        assert out.sequences.shape[0] == sentences * candidates
        run = {"sentences": sentences, "seconds": round(seconds, 2),
               "candidates_s": round(sentences * candidates / seconds, 1),
               "peak_gib": round(torch.cuda.max_memory_allocated() / 2**30, 1)}
        results["runs"].append(run)
        print(f"  M2M100-1.2B shape (random, bf16), transformers generate: {sentences} sentences x {beams} beams, "
              f"{candidates} candidates, {new_tokens} new tokens: {run['candidates_s']} candidates/s "
              f"({run['seconds']} s, peak {run['peak_gib']} GiB)")
    del model
    torch.cuda.empty_cache()
    try:
        import ctranslate2

        results["ctranslate2_cuda_devices"] = ctranslate2.get_cuda_device_count()
    except Exception as exc:  # not carried, or its CUDA 12 libraries missing
        results["ctranslate2"] = f"{type(exc).__name__}: {exc}"
    return results


def main(out_path: str) -> dict:
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    root = Path(tempfile.mkdtemp(prefix="xmdata-gpu-figures-"))
    figures: dict = {}
    only = set(filter(None, os.environ.get("GPU_BENCH_ONLY", "").split(",")))
    for fn in SECTIONS:
        if only and fn.__name__ not in only:
            continue
        started = time.perf_counter()
        print(f"[{fn.__name__}]", flush=True)
        try:
            figures[fn.__name__] = fn(root, figures)
        except Exception as exc:
            traceback.print_exc()
            figures[fn.__name__] = {"error": f"{type(exc).__name__}: {exc}"}
        figures.setdefault("seconds", {})[fn.__name__] = round(time.perf_counter() - started, 1)
        print(json.dumps({fn.__name__: figures[fn.__name__]}, default=str), flush=True)
        Path(out_path).write_text(json.dumps(figures, indent=2, default=str))
    return figures


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "gpu-figures.json")
