"""CLIP scoring stage: every image–text pair gets clip_score (ref_clip_score with references) and,
on request, its embeddings. A bad row stays in the table, status=rejected, and goes to rejects."""
from __future__ import annotations

import os
from dataclasses import replace
from functools import partial

import numpy as np
import pyarrow as pa
from pydantic import model_serializer

from xmdata.models.base import ModelSpec
from xmdata.models.oom_backoff import FAILED, OUT_OF_MEMORY, BatchSizes, report, run_with_backoff
from xmdata.models.registry import get_model
from xmdata.runtime import settings
from xmdata.runtime.params import Params
from xmdata.runtime.placement import needs_gpu
from xmdata.runtime.stage import Stage

from xmdata.tasks.build.batch_loader import PrefetchingLoader
from xmdata.tasks.build.image_decode import decode_image
from xmdata.tasks.stage_params import ScoringParams
from xmdata.tasks.scoring.output import scored_table
from xmdata.tasks.scoring.pairs import collect_pairs
from xmdata.tasks.scoring.score_memo import IMAGE_KIND, MEMO_EXCLUDE, TEXT_KIND, images_in_memo, texts_with_memo

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

    share = settings.OMP_NUM_THREADS.get() or len(os.sched_getaffinity(0))
    if model.device.startswith("cuda"):
        torch.set_num_threads(1)
        return share, model.preprocess, None
    return (share, *model.preprocess_stages())


def embed_with_backoff(items: list, embed, batch_size: int, sizes: BatchSizes) -> list:
    """One embedding per item (FAILED: out of memory even alone). Every call holds `batch_size`
    items, filled with copies of the last (one shape: an embedding does not depend on its
    batch-mates); a filled batch that runs out of memory is retried as it is, then halved — the rule
    of every model stage (oom_backoff.run_with_backoff)."""
    return run_with_backoff(items, lambda part: list(embed(part)), sizes, fill_to=batch_size)


def encode_texts(model, texts: list[str], batch_size: int, sizes: BatchSizes) -> tuple[np.ndarray, set[int]]:
    """(embeddings, indices of texts that ran out of memory even alone)."""
    embeddings = np.zeros((len(texts), model.embed_dim), np.float32)
    failed: set[int] = set()
    for start in range(0, len(texts), batch_size):
        rows = embed_with_backoff(texts[start:start + batch_size],
                                  lambda part: model.predict(model.prepare([], part))[1],
                                  batch_size, sizes)
        for offset, row in enumerate(rows):
            if row is FAILED:
                failed.add(start + offset)
            else:
                embeddings[start + offset] = row
    return embeddings, failed


def whole(sizes: BatchSizes, encode, *args):
    """`encode(*args, sizes)` and whether none of its batches ran out of memory (a halved batch's
    numbers are never stored)."""
    before = len(sizes.out_of_memory)
    return (*encode(*args, sizes), len(sizes.out_of_memory) == before)


def encode_images(model, loader: PrefetchingLoader, count: int, batch_size: int, finish=None,
                  sizes: BatchSizes | None = None):
    """(embeddings, {image index: (reason, message)}) for the images the loader decodes, in order;
    finish: the rest of the preprocess, when the loader ran only its first part."""
    sizes = sizes if sizes is not None else BatchSizes()
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
            pixels = [finish(decoded[i].pixels) if finish else decoded[i].pixels for i in good]
            rows = embed_with_backoff(pixels, lambda part: model.predict((model.stack_pixels(part), None))[0],
                                      batch_size, sizes)
            for offset, row in zip(good, rows):
                if row is FAILED:
                    failures[start + offset] = (OUT_OF_MEMORY, f"out of memory even alone ({sizes.summary()})")
                else:
                    embeddings[start + offset] = row
        start += len(decoded)
    return embeddings, failures


class ScoreShard(Params):
    """What a shard runs with: the stage's params whole, their open_clip model resolved
    (ScoringParams.spec) and what the input says, not the options: its image root and references."""
    params: ScoringParams
    model: ModelSpec
    image_root: str | None
    references_column: str | None

    @model_serializer
    def _record(self) -> dict:
        # What is hashed: the names and values shards were recorded with when they took the options
        # one by one, so that a shard finished then is still finished (tests/scoring/test_score_params.py).
        return {"model": self.model.to_dict(), "image_root": self.image_root,
                "references_column": self.references_column,
                "embeddings": None if self.params.embeddings == "none" else self.params.embeddings,
                "batch_size": self.params.batch_size, "weight": self.params.weight, "prefix": self.params.prefix,
                "max_pixels": self.params.max_image_pixels}


def score_table(table: pa.Table, shard: ScoreShard) -> tuple[pa.Table, pa.Table]:
    """The stage function: (one scores row per input row, rejects)."""
    model, params = get_model("clip_scorer", shard.model), shard.params
    batch_size = params.batch_size or model.default_batch_size()
    pairs = collect_pairs(table, shard.references_column, params.prefix)
    threads, in_threads, finish = loader_plan(model)
    load = partial(decode_image, root=shard.image_root, max_pixels=params.max_image_pixels, preprocess=in_threads)
    # The images and texts the memo of model work holds are not decoded or embedded (score_memo.py).
    images = images_in_memo(shard.model, pairs.images, shard.image_root, params.max_image_pixels)
    # Decoding starts now, in threads; encoding the texts meanwhile keeps the model busy from the start.
    sizes = BatchSizes()
    with PrefetchingLoader([pairs.images[i] for i in images.todo], batch_size, load, threads) as loader:
        text_emb, failed_texts = texts_with_memo(shard.model, pairs.texts, batch_size, model.embed_dim,
                                                 lambda texts: whole(sizes, encode_texts, model, texts, batch_size))
        ran_out = len(sizes.out_of_memory)
        computed, computed_failures = encode_images(model, loader, len(images.todo), batch_size, finish, sizes)
    images.store(computed, computed_failures, whole=len(sizes.out_of_memory) == ran_out)
    image_emb = np.zeros((len(pairs.images), model.embed_dim), np.float32)
    image_emb[images.todo] = computed
    for i, vector in images.held.items():
        image_emb[i] = vector
    failures = {**images.refused, **{images.todo[k]: why for k, why in computed_failures.items()}}
    report(STAGE, sizes)
    if failed_texts:  # a pair whose text or one of its references failed cannot be scored
        error = (OUT_OF_MEMORY, f"text out of memory even alone ({sizes.summary()})")
        pairs = replace(pairs, errors=[e if e is not None or not ({t} | set(refs)) & failed_texts else error
                                       for e, t, refs in zip(pairs.errors, pairs.text_of, pairs.refs_of)])
    truncated = np.array(model.truncated(pairs.texts), dtype=bool)
    return scored_table(table, pairs, image_emb, failures, text_emb, truncated, params, STAGE)


def clip_score_stage(params: ScoringParams, model: ModelSpec, image_root: str | None,
                     references_column: str | None = None) -> Stage:
    """`model`: params' open_clip model resolved (ScoringParams.spec), once by the flow. A config section
    that adds fields of its own (ScoringConfig, BenchmarksConfig) reaches the shard as ScoringParams.

    batch_size is a parameter of the output (padded fixed-shape batches), so it is hashed with the
    rest: a rerun with another batch size redoes the shards.
    """
    params = ScoringParams.model_validate(params.model_dump(include=set(ScoringParams.model_fields)))
    # 2: batches padded to batch_size on CPU too (a row's score no longer moves with its batch-mates)
    return Stage(STAGE, version="2", fn=score_table, params=ScoreShard(
        params=params, model=model, image_root=image_root, references_column=references_column),
        gpu=needs_gpu(model.device), memo_exclude=MEMO_EXCLUDE, memo_kinds=(IMAGE_KIND, TEXT_KIND),
        memo_gather=True)
