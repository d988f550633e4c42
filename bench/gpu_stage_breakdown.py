"""Where the scoring stage's time goes on a GPU machine (`python -m bench.gpu_stage_breakdown`):
the ViT-B-32 shape (random, bf16 autocast, batch 256) on 4096 pre-made 256 px JPEGs, timing apart
what the stage does in order: the loader alone (decode + full preprocess in its threads, as on CUDA),
the texts (tokenize + encode), the truncation count, then the whole stage."""
from __future__ import annotations

import json
import os
import tempfile
import time
from functools import partial
from pathlib import Path


def main() -> dict:
    import pyarrow as pa

    from bench.scoring_gpu import open_clip_spec
    from bench.scoring_inputs import make_images, random_vit_b_32
    from xmdata.models.oom_backoff import BatchSizes
    from xmdata.models.registry import get_model
    from xmdata.tasks.build.batch_loader import PrefetchingLoader
    from xmdata.tasks.build.image_decode import ImageRef, decode_image
    from xmdata.tasks.build.decoders import worker_decoders
    from xmdata.tasks.scoring.score import clip_score_stage, decoder_died, encode_texts
    from xmdata.tasks.stage_params import ScoringParams

    root = Path(tempfile.mkdtemp(prefix="xmdata-gpu-breakdown-"))
    spec = open_clip_spec(random_vit_b_32(root / "vit-b-32"))
    if os.environ.get("GPU_BENCH_DEVICE"):  # a dry run on the CPU
        spec = type(spec)(spec.backend, spec.name_or_path, device=os.environ["GPU_BENCH_DEVICE"], options=spec.options)
    paths = make_images(root / "images", int(os.environ.get("GPU_BENCH_PAIRS", 4096)))
    texts = [f"photo {i}: a red bicycle by a blue house in the evening light" for i in range(len(paths))]
    model = get_model("clip_scorer", spec)
    decoders = worker_decoders(None)
    out = {"loader": f"{decoders.count} decoder {decoders.kind}", "torch_threads": __import__("torch").get_num_threads()}

    load = partial(decode_image, root=str(root), max_pixels=10**8, preprocess=model.decode_recipe())
    refs = [ImageRef(path=p) for p in paths]
    started = time.perf_counter()
    one = [load(r) for r in refs[:256]]
    out["decode_ms_per_image_one_thread"] = round(1000 * (time.perf_counter() - started) / 256, 2)
    assert all(d.pixels is not None for d in one)
    started = time.perf_counter()
    with PrefetchingLoader(refs, 256, load, decoders, died=decoder_died) as loader:
        n = sum(len(batch) for batch in loader)
    out["loader_alone_images_s"] = round(n / (time.perf_counter() - started), 1)
    encode_texts(model, texts[:256], 256, BatchSizes())  # warm-up
    started = time.perf_counter()
    model.prepare([], texts)
    out["tokenize_texts_s"] = round(len(texts) / (time.perf_counter() - started), 1)
    started = time.perf_counter()
    encode_texts(model, texts, 256, BatchSizes())
    out["encode_texts_s"] = round(len(texts) / (time.perf_counter() - started), 1)
    started = time.perf_counter()
    model.truncated(texts)
    out["truncated_texts_s"] = round(len(texts) / (time.perf_counter() - started), 1)
    table = pa.table({"id": [f"p{i:05d}" for i in range(len(paths))], "image_path": paths, "text": texts})
    stage = clip_score_stage(ScoringParams(clip_model=spec.name_or_path, batch_size=256), spec, str(root))
    stage.fn(table.slice(0, 256), stage.params)
    started = time.perf_counter()
    stage.fn(table, stage.params)
    out["stage_pairs_s"] = round(len(paths) / (time.perf_counter() - started), 1)
    print(json.dumps(out))
    return out


if __name__ == "__main__":
    result = main()
    if os.environ.get("OUT"):
        Path(os.environ["OUT"], "breakdown.json").write_text(json.dumps(result, indent=2))
