"""CLIP scoring stage: every image–text pair gets clip_score (ref_clip_score with references) and,
on request, its embeddings. A bad row stays in the table, status=rejected, and goes to rejects."""
from __future__ import annotations

import os
from functools import partial

import numpy as np
import pyarrow as pa

from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
from xmdata.runtime.stage import Stage

from .batch_loader import PrefetchingLoader
from .clip_scores import DEFAULT_WEIGHT
from .image_decode import DEFAULT_MAX_PIXELS, decode_image
from .score_output import scored_table
from .score_pairs import collect_pairs

STAGE = "clip_score"


def loader_plan(model) -> tuple[int, object, object]:
    """(threads, what they run per image, what the model's thread runs per image).

    Threads: the worker's share of the cores (OMP_NUM_THREADS, as a LocalCluster sets it). torch ops
    start an OpenMP team each, which in loader threads fights the model's team for the cores
    (measured on 2 busy cores: 24 ms per image instead of 2.3). On CPU the threads therefore run only
    the PIL part of the preprocess and the model's thread the tensor part; on CUDA, where the CPU has
    nothing else to do, torch gets one thread (process-wide) and the threads run all of it.
    """
    import torch

    share = int(os.environ.get("OMP_NUM_THREADS") or 0) or len(os.sched_getaffinity(0))
    if model.device.startswith("cuda"):
        torch.set_num_threads(1)
        return share, model.preprocess, None
    return (share, *model.preprocess_stages())


def encode_texts(model, texts: list[str], batch_size: int) -> np.ndarray:
    parts = [model.predict(model.prepare([], texts[i:i + batch_size]), pad_to=batch_size)[1]
             for i in range(0, len(texts), batch_size)]
    return np.concatenate(parts) if parts else np.zeros((0, model.embed_dim), np.float32)


def encode_images(model, loader: PrefetchingLoader, count: int, batch_size: int, finish=None):
    """(embeddings, {image index: (reason, message)}) for the images the loader decodes, in order;
    finish: the rest of the preprocess, when the loader ran only its first part."""
    embeddings = np.zeros((count, model.embed_dim), np.float32)
    failures: dict[int, tuple[str, str]] = {}
    start = 0
    for decoded in loader:
        good = []
        for offset, image in enumerate(decoded):
            if image.pixels is None:
                failures[start + offset] = (image.reason, image.message)
            else:
                good.append(offset)
        if good:
            pixels = model.stack_pixels([finish(decoded[i].pixels) if finish else decoded[i].pixels
                                         for i in good])
            embeddings[[start + i for i in good]] = model.predict((pixels, None), pad_to=batch_size)[0]
        start += len(decoded)
    return embeddings, failures


def score_table(table: pa.Table, params: dict) -> tuple[pa.Table, pa.Table]:
    """The stage function: (one scores row per input row, rejects)."""
    model = get_model("clip_scorer", ModelSpec(**params["model"]))
    batch_size = params["batch_size"] or model.default_batch_size()
    pairs = collect_pairs(table, params["references_column"], params["prefix"])
    threads, in_threads, finish = loader_plan(model)
    load = partial(decode_image, root=params["image_root"], max_pixels=params["max_pixels"], preprocess=in_threads)
    # Decoding starts now, in threads; encoding the texts meanwhile keeps the model busy from the start.
    with PrefetchingLoader(pairs.images, batch_size, load, threads) as loader:
        text_emb = encode_texts(model, pairs.texts, batch_size)
        image_emb, failures = encode_images(model, loader, len(pairs.images), batch_size, finish)
    truncated = np.array(model.truncated(pairs.texts), dtype=bool)
    return scored_table(table, pairs, image_emb, failures, text_emb, truncated, params, STAGE)


def clip_score_stage(model: ModelSpec, image_root: str | None, references_column: str | None = None,
                     embeddings: str | None = None, batch_size: int | None = None,
                     weight: float = DEFAULT_WEIGHT, prefix: str = "",
                     max_pixels: int = DEFAULT_MAX_PIXELS) -> Stage:
    """embeddings: None, "float16" or "float32". batch_size None: the device's default.

    batch_size is a parameter of the output on CUDA (padded fixed-shape batches), so it is hashed
    with the rest: a rerun with another batch size redoes the shards.
    """
    return Stage(STAGE, version="1", fn=score_table, params={
        "model": model.to_dict(), "image_root": image_root, "references_column": references_column,
        "embeddings": embeddings, "batch_size": batch_size, "weight": weight, "prefix": prefix,
        "max_pixels": max_pixels})
