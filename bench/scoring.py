"""P1: throughput of the scoring flow ÷ bare batched encode_image + encode_text of the same model on
pre-decoded tensors; same machine, same run, same batch size and torch threads. Goal ≥ 0.90.

Flow figure (pairs/s): one `score` flow call on a warm Dask LocalCluster of one worker holding
every core — reading the pairs, ingest into shards, one Dask task per shard, JPEG decoding from
disk in the loader's threads, the model's preprocess, encoding, scores, Parquet, records, summary.
Bare figure: encode_image/encode_text alone on that same worker (same process, threads and model),
on pixels decoded and texts tokenised beforehand (not timed), once before and once after the flow.
Not counted, printed apart: Prefect server start, cluster start and the worker's one-time imports
and model load (a warm-up flow on a few pairs). Models: the tiny test CLIP and a ViT-B-32 shape with
random weights. On CUDA, bench.scoring_gpu adds the xlm-roberta-large-ViT-H-14 shape in bf16.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path

import pyarrow.parquet as pq
from PIL import Image

from .scoring_inputs import make_images, random_vit_b_32, write_pairs

CASES = [("tiny", 512, 4), ("ViT-B-32 (random)", 128, 2)]  # model, pairs, shards
BATCH = 32


def bare_pairs_per_second(spec, root: Path, paths: list[str], texts: list[str]) -> float:
    from xmdata.models.registry import get_model

    model = get_model("clip_scorer", spec)
    pixels = [model.preprocess(Image.open(root / p).convert("RGB")) for p in paths]
    tokens = model.prepare([], texts)[1]
    model.predict((model.stack_pixels(pixels[:BATCH]), tokens[:BATCH]))  # first call: lazy init
    started = time.perf_counter()
    for i in range(0, len(paths), BATCH):
        model.predict((model.stack_pixels(pixels[i:i + BATCH]), tokens[i:i + BATCH]))
    return len(paths) / (time.perf_counter() - started)


def decode_ms(spec, root: Path, paths: list[str]) -> float:
    """One decoder's work per image (open, decode, the PIL part of the preprocess), in ms."""
    from xmdata.models.registry import get_model
    from xmdata.tasks.build.image_decode import ImageRef, decode_image

    recipe = get_model("clip_scorer", spec).decode_recipe()
    started = time.perf_counter()
    for p in paths[:64]:
        decode_image(ImageRef(path=p), str(root), 10**8, recipe)
    return 1000 * (time.perf_counter() - started) / len(paths[:64])


def flow_pairs_per_second(model_dir: str, pairs: str, root: Path, out: Path, shards: int) -> float:
    from xmdata.flows.score import score_flow
    from xmdata.tasks.stage_params import ScoringParams

    started = time.perf_counter()
    result = score_flow(input_path=pairs, out=str(out), params=ScoringParams(clip_model=model_dir, batch_size=BATCH),
                        image_root=str(root), shards=shards)
    seconds = time.perf_counter() - started
    assert result["scoring_run"]["scored"] == pq.read_metadata(pairs).num_rows
    return pq.read_metadata(pairs).num_rows / seconds


def measure_case(model_dir: str, root: Path, paths: list[str], shards: int, cores: str) -> dict:
    """On one warm worker: bare, then the flow, then bare again (P1 uses their mean, so that load
    drifting on a shared machine does not favour either side). Bare runs on the worker itself: the
    same process, threads and model instance as the flow's shards."""
    from distributed import Client, LocalCluster

    from xmdata.runtime.session import execution_session
    from xmdata.tasks.stage_params import ScoringParams

    spec, n = ScoringParams(clip_model=model_dir).spec(), len(paths)
    pairs = write_pairs(root / f"pairs-{n}.parquet", paths)
    texts = pq.read_table(pairs).column("text").to_pylist()
    started = time.perf_counter()
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0",
                      env={"OMP_NUM_THREADS": cores, "MKL_NUM_THREADS": cores}) as cluster, Client(cluster) as client, \
            execution_session(address=cluster.scheduler_address):  # every shard on that one worker
        warm = write_pairs(root / "warm.parquet", paths[:8])
        flow_pairs_per_second(model_dir, warm, root, root / f"warm-{n}", 1)
        warm_s = time.perf_counter() - started
        on_worker = lambda fn, *args: client.submit(fn, *args, pure=False).result()  # noqa: E731
        bare = [on_worker(bare_pairs_per_second, spec, root, paths, texts)]
        # The same 8 pairs again, warm: what a flow call costs besides its pairs' model time.
        fixed_s = 8 / flow_pairs_per_second(model_dir, warm, root, root / f"fixed-{n}", 1)
        flow = flow_pairs_per_second(model_dir, pairs, root, root / f"out-{n}", shards)
        bare.append(on_worker(bare_pairs_per_second, spec, root, paths, texts))
        loader_ms = on_worker(decode_ms, spec, root, paths)
    mean_bare = sum(bare) / 2
    return {"bare_pairs_s": [round(b, 1) for b in bare], "flow_pairs_s": round(flow, 1),
            "p1_ratio": round(flow / mean_bare, 2), "flow_fixed_s": round(fixed_s - 8 / mean_bare, 1),
            "loader_ms_per_image": round(loader_ms, 2), "warm_up_s": round(warm_s), "pairs": n}


def main() -> dict:
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    root = Path(tempfile.mkdtemp(prefix="xmdata-bench-scoring-"))
    os.environ.setdefault("PREFECT_HOME", str(root / "prefect"))
    import torch

    from xmdata.models.tiny_corpus import generate_sentences
    from xmdata.models.tiny_xlmr import build_tiny_open_clip, build_tiny_xlmr
    from xmdata.runtime.prefect_api import prefect_api

    started = time.perf_counter()
    tiny = str(build_tiny_open_clip(root / "tiny", build_tiny_xlmr(root / "xlmr", generate_sentences(seed=0)), 0))
    model_dirs = {"tiny": tiny, "ViT-B-32 (random)": random_vit_b_32(root / "vit-b-32")}
    images = make_images(root / "images", max(n for _, n, _ in CASES))
    cores = str(torch.get_num_threads())
    print(f"scoring: {cores} torch threads, batch {BATCH}, 256 px JPEGs "
          f"(models and images made in {time.perf_counter() - started:.0f} s)")
    figures = {}
    started = time.perf_counter()
    with prefect_api():
        print(f"  Prefect server start {time.perf_counter() - started:.1f} s (not counted)")
        for name, n, shards in CASES:
            f = figures[name] = measure_case(model_dirs[name], root, images[:n], shards, cores)
            bare = sum(f["bare_pairs_s"]) / 2
            print(f"  {name:18s} {n:5d} pairs, {shards} shards: bare {f['bare_pairs_s'][0]} / "
                  f"{f['bare_pairs_s'][1]} pairs/s (before / after), flow {f['flow_pairs_s']} pairs/s, "
                  f"P1 = {f['p1_ratio']:.2f}")
            print(f"  {'':18s} flow {n / f['flow_pairs_s']:.1f} s = model {n / bare:.1f} s at the bare rate + "
                  f"{f['flow_fixed_s']:.1f} s per flow call (from an 8-pair run) + the rest: loader threads "
                  f"({f['loader_ms_per_image']} ms/image) sharing the cores with the model; cluster start "
                  f"and model load {f['warm_up_s']} s, not counted")
    if torch.cuda.is_available():
        from bench.scoring_gpu import main as gpu_main

        figures["gpu"] = gpu_main(root)
    shutil.rmtree(root, ignore_errors=True)  # random weights and images: hundreds of MB per run
    return figures


if __name__ == "__main__":
    main()
