"""CLIP scoring stage: every image–text pair gets clip_score (ref_clip_score with references) and,
on request, its embeddings. A bad row stays in the table, status=rejected, and goes to rejects."""
from __future__ import annotations

import logging
import time
from contextlib import contextmanager
from dataclasses import replace
from functools import partial

import numpy as np
import pyarrow as pa
from pydantic import model_serializer

from xmdata.models.base import ModelSpec
from xmdata.models.oom_backoff import FAILED, OUT_OF_MEMORY, BatchSizes, report, run_with_backoff
from xmdata.models.loader_facts import LoaderFacts
from xmdata.models.pil_steps import output_bytes
from xmdata.models.registry import get_model
from xmdata.models.tensor_steps import TensorRecipe
from xmdata.runtime import memo
from xmdata.runtime.params import Params
from xmdata.runtime.placement import needs_gpu
from xmdata.runtime.stage import Stage

from xmdata.tasks.build.batch_loader import PrefetchingLoader, prefetch_depth, worker_loader
from xmdata.tasks.build.decoders import default_count
from xmdata.tasks.build.early_loader import model_and_loader
from xmdata.tasks.build.image_decode import Decoded, ImageRef, decode_image, decoder_died, jpegs_decoded
from xmdata.tasks.stage_params import ScoringParams
from xmdata.tasks.scoring.output import scored_table
from xmdata.tasks.scoring.pairs import collect_pairs
from xmdata.tasks.scoring.score_memo import IMAGE_KIND, MEMO_EXCLUDE, TEXT_KIND, images_in_memo, texts_with_memo

STAGE = "clip_score"
log = logging.getLogger(__name__)


def image_loader(images: list[ImageRef], shard: "ScoreShard", facts: LoaderFacts) -> PrefetchingLoader:
    """The shard's images, decoded by this worker's decoders (tasks/build/decoders.py) into the uint8
    pixels the model's own transform makes before its float part (the model's decode_recipe, or the
    record of it: models/loader_facts.py); `fast` mode decodes a JPEG only as large as the transform
    keeps; `device` mode has the decoders send a JPEG's bytes, decoded on the model's device as each
    batch is handed over (device_jpegs). Up to PREFETCH_BYTES_A_DECODER of pixels a decoder decoded ahead
    (batch_loader.prefetch_depth)."""
    params = shard.params
    recipe, batch_size = facts.recipe, params.batch_size or facts.batch_size
    pil = partial(decode_image, root=shard.image_root, max_pixels=params.max_image_pixels, preprocess=recipe)
    load, finish = partial(pil, draft=recipe.keep if params.decode_mode == "fast" else None), None
    if params.decode_mode == "device" and TensorRecipe.of(recipe) is not None:
        load, finish = partial(pil, raw_jpeg=True), partial(jpegs_decoded, partial(device_jpegs, shard.model), pil)
    elif params.decode_mode == "device":  # the fast path declines: -v says why, once a shard
        log.info("%s: decode_mode device decodes as exact mode: the transform has a step with no tensor twin (%s)",
                 STAGE, ", ".join(type(step).__name__ for step in recipe.steps))
    # On a GPU worker the default moves with what the other workers run: a larger pool is kept, not restarted.
    gpu_default = params.decoders is None and needs_gpu(shard.model.device)
    count = params.decoders or default_count(gpu=gpu_default)
    # A JPEG's bytes are as large as its file, which no recipe bounds: device mode prefetches the default.
    return worker_loader(images, batch_size, load, count, died=decoder_died, finish=finish, keep_more=gpu_default,
                         depth=prefetch_depth(batch_size, None if finish else output_bytes(recipe), count))


def device_jpegs(spec: ModelSpec, datas: list[bytes]) -> list:
    """JPEG bytes decoded and resized by the model on its device (pixels_from_jpegs). Called as a batch is
    handed over, so after the model has loaded (the loader may start before: early_loader.py)."""
    return get_model("clip_scorer", spec).pixels_from_jpegs(datas)


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


def encode_images(model, loader: PrefetchingLoader, count: int, batch_size: int,
                  sizes: BatchSizes | None = None):
    """(embeddings, {image index: (reason, message)}, Throughput) for the images the loader decodes, in order."""
    sizes = sizes if sizes is not None else BatchSizes()
    embeddings = np.zeros((count, model.embed_dim), np.float32)
    failures: dict[int, tuple[str, str]] = {}
    clock = Throughput(loader.decoders.kind, loader.decoders.count, loader.started)
    start = 0
    for decoded in clock.waiting(loader):
        good = []
        for offset, image in enumerate(decoded):
            if image.pixels is None:
                failures[start + offset] = (image.reason, image.message)
            else:
                good.append(offset)
        if good:
            with clock.model(len(good)):
                rows = embed_with_backoff([decoded[i].pixels for i in good],
                                          lambda part: model.predict((model.pixels_from_uint8(part), None))[0],
                                          batch_size, sizes)
            for offset, row in zip(good, rows):
                if row is FAILED:
                    failures[start + offset] = (OUT_OF_MEMORY, f"out of memory even alone ({sizes.summary()})")
                else:
                    embeddings[start + offset] = row
        start += len(decoded)
    return embeddings, failures, clock


class Throughput:
    """Where a shard's image time went: waiting for the loader, or in the model; its bottleneck."""

    def __init__(self, kind: str, decoders: int, started: float):
        self.kind, self.decoders = kind, decoders
        self.images = 0
        self.waited = self.modelled = 0.0
        self.started = self.loaded_at = started  # when the loader started decoding

    def waiting(self, loader):
        batches = iter(loader)
        while True:
            before = time.perf_counter()
            batch = next(batches, None)
            if batch is None:
                return
            self.loaded_at = time.perf_counter()
            self.waited += self.loaded_at - before
            yield batch

    @contextmanager
    def model(self, images: int):
        before = time.perf_counter()
        yield
        self.modelled += time.perf_counter() - before
        self.images += images

    def summary(self) -> str:
        """"loader N images/s, model M/s: loader-bound": the loader's rate is the images over the time until
        its last batch arrived (a floor when the model was the slower)."""
        loader = self.images / max(self.loaded_at - self.started, 1e-9)
        model = self.images / max(self.modelled, 1e-9)
        bound = "loader-bound" if self.waited > self.modelled else "model-bound"
        return (f"loader {loader:.0f} images/s ({self.decoders} decoder {self.kind}), model {model:.0f}/s: "
                f"{bound}")


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
                "max_pixels": self.params.max_image_pixels,
                # exact mode is what every shard computed before the modes (same bits): not named, so
                # those shards stay finished. The decoder count changes no output: not hashed.
                **({"decode_mode": self.params.decode_mode} if self.params.decode_mode != "exact" else {})}


def score_table(table: pa.Table, shard: ScoreShard) -> tuple[pa.Table, pa.Table]:
    """The stage function: (one scores row per input row, rejects)."""
    params = shard.params
    pairs = collect_pairs(table, shard.references_column, params.prefix)
    # The images and texts the memo of model work holds are not decoded or embedded (score_memo.py).
    memo.note_keying(prefix=params.prefix, image_root=shard.image_root)  # for `explain ROW`
    images = images_in_memo(shard.model, pairs.images, shard.image_root, params.max_image_pixels)
    # Decoding starts now, before the model has loaded where its recipe is on record (early_loader.py);
    # encoding the texts meanwhile keeps the model busy from the start.
    sizes = BatchSizes()
    todo = [pairs.images[i] for i in images.todo]
    with model_and_loader("clip_scorer", shard.model, partial(image_loader, todo, shard)) as (model, loader, facts):
        batch_size = params.batch_size or facts.batch_size
        text_emb, failed_texts = texts_with_memo(shard.model, pairs.texts, batch_size, model.embed_dim,
                                                 lambda texts: whole(sizes, encode_texts, model, texts, batch_size))
        ran_out = len(sizes.out_of_memory)
        computed, computed_failures, throughput = encode_images(model, loader, len(images.todo), batch_size, sizes)
    images.store(computed, computed_failures, whole=len(sizes.out_of_memory) == ran_out)
    image_emb = np.zeros((len(pairs.images), model.embed_dim), np.float32)
    image_emb[images.todo] = computed
    for i, vector in images.held.items():
        image_emb[i] = vector
    failures = {**images.refused, **{images.todo[k]: why for k, why in computed_failures.items()}}
    report(STAGE, sizes)
    if throughput.images:
        log.info("%s: %s", STAGE, throughput.summary())
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
