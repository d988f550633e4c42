"""Images into an embedder, read as every image reader reads them (tasks/build/batch_loader.worker_loader):
decoded in this worker's decoder processes by the embedder's own recipe, a batch at a time, so what is
held is bounded by the loader (prefetch depth x a batch), never a whole shard at full size.

An embedder that gives its recipe (`decode_recipe()`, PIL steps a decoder runs) and takes the uint8
pixels it makes (`embed_pixels`) gets only those pixels back from the decoders; any other gets the
whole RGB image and its own `embed_images`. The good images are embedded in batches of the embedder's
BATCH in input order, as one `embed_images` call over them all batched them: the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any, Sequence

import numpy as np

from xmdata.models.embedders import BATCH
from xmdata.models.pil_steps import Crop, PilRecipe

from .batch_loader import worker_loader
from .image_decode import Decoded, ImageRef, decode_image, decoder_died

WHOLE_RGB = PilRecipe(())  # the decoded RGB image as it is, for an embedder without a recipe of its own


@dataclass(frozen=True)
class Region:
    """An image (`ref`, under `root`) and the box of it to embed (left, upper, right, lower), None: all."""
    ref: ImageRef
    root: str | None
    box: tuple[int, int, int, int] | None = None


def decode_region(region: Region, max_pixels: int, recipe: PilRecipe) -> Decoded:
    """Runs in a decoder: the region, cropped, through the recipe (image_decode.decode_image's checks)."""
    steps = recipe if region.box is None else PilRecipe((Crop(tuple(region.box)), *recipe.steps), recipe.keep)
    return decode_image(region.ref, region.root, max_pixels, steps)


def region_died(region: Region, message: str) -> Decoded:
    return decoder_died(region.ref, message)


def recipe_of(embedder) -> PilRecipe:
    recipe = getattr(embedder, "decode_recipe", None)
    return recipe() if recipe is not None else WHOLE_RGB


def embed_arrays(embedder, arrays: Sequence[np.ndarray]) -> np.ndarray:
    if hasattr(embedder, "embed_pixels"):
        return embedder.embed_pixels(arrays)
    from PIL import Image

    return embedder.embed_images([Image.fromarray(a) for a in arrays])


def embed_regions(embedder, regions: list[Region], max_pixels: int,
                  decoders: int | None = None) -> tuple[dict[int, np.ndarray], dict[int, tuple[str, str]]]:
    """({index: embedding}, {index: (reason, message)}) for `regions`, every one in exactly one of them."""
    vectors: dict[int, np.ndarray] = {}
    failures: dict[int, tuple[str, str]] = {}
    if not regions:
        return vectors, failures
    waiting: list[tuple[int, Any]] = []

    def embed_waiting() -> None:
        for (index, _), vector in zip(waiting, embed_arrays(embedder, [pixels for _, pixels in waiting])):
            vectors[index] = vector
        waiting.clear()

    load = partial(decode_region, max_pixels=max_pixels, recipe=recipe_of(embedder))
    index = 0
    for batch in worker_loader(regions, BATCH, load, decoders, region_died):
        for decoded in batch:
            if decoded.pixels is None:
                failures[index] = (decoded.reason, decoded.message)
            else:
                waiting.append((index, decoded.pixels))
                if len(waiting) == BATCH:
                    embed_waiting()
            index += 1
    if waiting:
        embed_waiting()
    return vectors, failures


def embed_image_refs(embedder, refs: list[ImageRef], root: str | None, max_pixels: int,
                     decoders: int | None = None) -> tuple[dict[int, np.ndarray], dict[int, tuple[str, str]]]:
    """embed_regions of whole images, all under `root`."""
    return embed_regions(embedder, [Region(ref, root) for ref in refs], max_pixels, decoders)
