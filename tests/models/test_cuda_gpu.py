"""The CUDA paths, run for real on a GPU (marker `gpu`; skipped without a CUDA device, deselected by
default: `pytest -m gpu tests/models/test_cuda_gpu.py`). Each test builds only the tiny models it
needs, so that the suite's GPU part runs where only torch, transformers and open_clip are installed.

What they check: clip_score on CUDA against the CPU (float32 and bf16 autocast); that padding makes
a row's embedding independent of its batch-mates; the out-of-memory backoff on a real
torch.cuda.OutOfMemoryError raised by CUDA's allocator; beam search with candidates on CUDA, its best
candidates as the CPU's for ≥ AGREEMENT of the sentences (the CPU-only engine tests' threshold); and the
local cluster a command starts on a GPU machine running a CUDA stage's task on its GPU worker.

dask-cuda is not in requirements.lock: no release fits the lock (rapids-dask-dependency, which every
dask-cuda requires, pins dask and distributed <2026.7.2 in its newest release, 26.10.0, where the lock
has 2026.8.0; dask-cuda 26.x also needs numpy>=2, unbabel-comet numpy<2). So the cluster test starts
the cluster as `start_local_cluster` does, whichever the environment gives (LocalCUDACluster where
dask-cuda is installed, the LocalCluster with a GPU worker a device in the lock's environment), and
skips on neither.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
import torch
from support.engines import AGREEMENT, agreement

pytestmark = pytest.mark.gpu


def tiny_xlmr(out, sentences):
    """The tiny XLM-R tokenizer and config; XMDATA_GPU_TINY: a folder holding one built beforehand
    (build_tiny_xlmr needs transformers<5's sentencepiece XLMRobertaTokenizer; a GPU machine may
    have transformers 5, and loading what it built works there)."""
    import shutil

    from xmdata.models.tiny_xlmr import build_tiny_xlmr
    from xmdata.runtime.settings import GPU_TINY

    prebuilt = GPU_TINY.get()
    if prebuilt:
        return Path(shutil.copytree(Path(prebuilt) / "xlm-roberta", out / "xlm-roberta"))
    return build_tiny_xlmr(out / "xlm-roberta", sentences)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    from xmdata.models.tiny_corpus import generate_sentences
    from xmdata.models.tiny_xlmr import build_tiny_open_clip

    out = tmp_path_factory.mktemp("tiny-gpu")
    sentences = generate_sentences(seed=0)
    xlmr = tiny_xlmr(out, sentences)
    return {"out": out, "sentences": sentences, "open_clip": build_tiny_open_clip(out / "open_clip", xlmr, 0)}


def clip_spec(tiny_dir, device: str, autocast: str | None = None):
    from xmdata.models.base import ModelSpec
    from xmdata.models.tiny_xlmr import OPEN_CLIP_WEIGHTS

    folder = tiny_dir["open_clip"]
    options = {"pretrained": str(folder / OPEN_CLIP_WEIGHTS)}
    if autocast:
        options["autocast"] = autocast
    return ModelSpec("open_clip", str(folder), device=device, options=tuple(options.items()))


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    """24 distinct JPEGs and their captions, as the scoring stage reads them."""
    from PIL import Image

    root = tmp_path_factory.mktemp("gpu-images")
    rng = np.random.default_rng(0)
    paths = []
    for i in range(24):
        small = Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
        if i == 5:  # plain white: the one image test_a_real_cuda_out_of_memory… recognises in any batch
            small = Image.new("RGB", (8, 8), "white")
        small.resize((96, 96), Image.BICUBIC).save(root / f"{i:03d}.jpg", quality=90)
        paths.append(f"{i:03d}.jpg")
    texts = [f"a photo of {i} red bicycles by the blue house" for i in range(len(paths))]
    return root, pa.table({"id": [f"p{i:03d}" for i in range(len(paths))], "image_path": paths, "text": texts})


def run_stage(spec, root, table, batch_size=8):
    from xmdata.tasks.scoring.score import clip_score_stage
    from xmdata.tasks.stage_params import ScoringParams

    stage = clip_score_stage(ScoringParams(clip_model=spec.name_or_path, batch_size=batch_size), spec, str(root))
    return stage.fn(table, stage.params)


def test_clip_scores_on_cuda_match_the_cpu(tiny_dir, pairs):
    root, table = pairs
    cpu, _ = run_stage(clip_spec(tiny_dir, "cpu"), root, table)
    fp32, rejects = run_stage(clip_spec(tiny_dir, "cuda"), root, table)
    bf16, _ = run_stage(clip_spec(tiny_dir, "cuda", "bfloat16"), root, table)
    assert rejects.num_rows == 0 and fp32.column("status").to_pylist() == ["ok"] * table.num_rows
    expected = np.array(cpu.column("clip_score").to_pylist())
    fp32_diff = np.abs(np.array(fp32.column("clip_score").to_pylist()) - expected).max()
    bf16_diff = np.abs(np.array(bf16.column("clip_score").to_pylist()) - expected).max()
    print(f"clip_score max |cuda - cpu|: float32 {fp32_diff:.2e}, bf16 autocast {bf16_diff:.2e}")
    assert fp32_diff < 5e-3  # cuDNN's convolutions may use TF32
    assert bf16_diff < 5e-2


def test_a_padded_row_embeds_the_same_in_any_cuda_batch(tiny_dir):
    """predict(pad_to=N) runs every batch at one shape, so a row's embedding does not depend on how
    many rows share its batch or which; without padding, report how far it moves."""
    from xmdata.models.registry import get_model

    model = get_model("clip_scorer", clip_spec(tiny_dir, "cuda", "bfloat16"))
    texts = [f"sentence number {i} about a small green tree" for i in range(16)]
    tokens = model.prepare([], texts)[1]
    full = model.predict((None, tokens), pad_to=16)[1]
    alone = model.predict((None, tokens[3:4]), pad_to=16)[1]
    others = model.predict((None, torch.cat([tokens[8:16], tokens[3:4]])), pad_to=16)[1]
    unpadded = model.predict((None, tokens[3:4]))[1]
    drift = np.abs(unpadded[0] - full[3]).max()
    print(f"bf16 text embedding of one row: padded batches differ by {np.abs(alone[0] - full[3]).max():.2e} "
          f"and {np.abs(others[-1] - full[3]).max():.2e}; batch of 1 unpadded vs 16: {drift:.2e}")
    np.testing.assert_allclose(alone[0], full[3], rtol=0, atol=1e-6)
    np.testing.assert_allclose(others[-1], full[3], rtol=0, atol=1e-6)


def hog_memory(model, monkeypatch, bytes_for):
    """model.predict first allocates bytes_for(n inputs) on the GPU: a batch whose share does not fit
    runs into CUDA's allocator and its real torch.cuda.OutOfMemoryError."""
    real = model.predict
    seen = []

    def predict(batch, pad_to=None):
        pixels, tokens = batch
        rows = pixels if pixels is not None else tokens
        seen.append(len(rows))
        hog = torch.empty(bytes_for(rows), dtype=torch.uint8, device=model.device)
        del hog
        return real(batch, pad_to=pad_to)

    monkeypatch.setattr(model, "predict", predict)
    return seen


def test_a_real_cuda_out_of_memory_halves_the_batch_and_refuses_only_what_fails_alone(tiny_dir, pairs, monkeypatch):
    from xmdata.models.registry import get_model

    root, table = pairs
    spec = clip_spec(tiny_dir, "cuda", "bfloat16")
    expected, _ = run_stage(spec, root, table)
    model = get_model("clip_scorer", spec)
    torch.cuda.empty_cache()
    baseline = torch.cuda.memory_allocated()
    free = torch.cuda.mem_get_info()[0]
    per_row = free // 6  # a batch of 8 asks for 4/3 of the free memory, one of 4 for 2/3

    seen = hog_memory(model, monkeypatch, lambda rows: per_row * len(rows))
    got, rejects = run_stage(spec, root, table)
    assert 8 in seen and 4 in seen and rejects.num_rows == 0
    assert got.column("status").to_pylist() == ["ok"] * table.num_rows
    diff = np.abs(np.array(got.column("clip_score").to_pylist())
                  - np.array(expected.column("clip_score").to_pylist())).max()
    print(f"after real OOMs (batch sizes {sorted(set(seen), reverse=True)}): max clip_score change {diff:.2e}")
    assert diff < 5e-2  # the halves run at their own shape, not padded to 8
    assert torch.cuda.memory_allocated() <= baseline + 2**20  # the failed batches' tensors were freed

    # The plain white image of row 5 asks for twice the GPU's memory even alone: only it is refused.
    monkeypatch.undo()

    def bytes_for(rows):
        if rows.dim() == 4 and bool((rows.flatten(2).std(dim=2).amax(dim=1) < 1e-3).any()):  # flat in every channel
            return 2 * torch.cuda.mem_get_info()[1]
        return 0

    hog_memory(model, monkeypatch, bytes_for)
    got, rejects = run_stage(spec, root, table)
    statuses = got.column("status").to_pylist()
    assert statuses[5] == "rejected" and statuses[:5] + statuses[6:] == ["ok"] * (table.num_rows - 1)
    assert rejects.column("reason").to_pylist() == ["out_of_memory"] and rejects.column("row_id").to_pylist() == ["p005"]
    assert torch.cuda.memory_allocated() <= baseline + 2**20


def test_beam_search_with_candidates_runs_on_cuda(tiny_dir):
    from xmdata.models.base import ModelSpec
    from xmdata.models.registry import get_model
    from xmdata.models.tiny_translators import build_tiny_m2m100

    folder = build_tiny_m2m100(tiny_dir["out"] / "m2m100", tiny_dir["sentences"], 0)
    texts = ["the dog runs", "a red cat sleeps on the chair", "the child sees a small tree", *tiny_dir["sentences"][:37]]
    best = {}
    for device in ("cpu", "cuda"):
        translator = get_model("translator", ModelSpec("m2m100", str(folder), device=device))
        out = translator.predict(translator.prepare(texts, "en", "fr"), 4, 2, 16)
        assert len(out) == len(texts) and all(1 <= len(c) <= 2 for c in out)
        assert all(np.isfinite(c.sequence_score) for cands in out for c in cands)
        best[device] = [cands[0].text for cands in out]
    same = agreement(best["cpu"], best["cuda"])
    print(f"tiny M2M100, 4 beams / 2 candidates: best candidate equal on CPU and CUDA for {same:.1%} of {len(texts)}")
    assert same >= AGREEMENT


def on_gpu() -> dict:
    import os

    import torch

    from distributed import get_worker

    return {"worker": get_worker().name, "visible": os.environ.get("CUDA_VISIBLE_DEVICES"), "cuda": torch.cuda.is_available(),
            "name": torch.cuda.get_device_name() if torch.cuda.is_available() else None}


def test_the_local_cluster_of_a_gpu_machine_runs_a_cuda_stage_on_its_gpu_worker():
    import importlib.util

    from xmdata.runtime.cluster import close_local_cluster, start_local_cluster
    from xmdata.runtime.cuda_cluster import local_cluster_plan
    from xmdata.runtime.placement import gpu_ids, needs_gpu, placement

    gpus = gpu_ids()
    plan = local_cluster_plan(gpus, 1)
    assert gpus and plan.gpus == tuple(gpus)
    assert plan.cuda == (importlib.util.find_spec("dask_cuda") is not None)
    cluster, client = start_local_cluster(1)
    try:
        client.wait_for_workers(len(gpus) + 1, timeout=120)
        ran_gpu = client.submit(on_gpu, pure=False, **placement(client, needs_gpu("cuda"))).result(timeout=120)
        ran_cpu = client.submit(on_gpu, pure=False, **placement(client, needs_gpu("cpu"))).result(timeout=120)
        print(f"{type(cluster).__name__}: GPU stage ran with {ran_gpu}; CPU stage with {ran_cpu}")
        assert ran_gpu["cuda"] and ran_gpu["visible"] in gpus
        if plan.cuda:  # dask-cuda's CPU workers see no GPU; the LocalCluster's see what the machine has
            assert not ran_cpu["cuda"]
        assert ran_cpu["worker"] != ran_gpu["worker"]
    finally:
        close_local_cluster(cluster, client)
