"""A model's image preprocess up to its pixels, as plain PIL steps a decoder process runs without torch.

A backend reads its own transform into these (models/open_clip_scorer.py: `decode_recipe`); the
decoders then ship uint8 HWC arrays and the model's process does the float part (÷255, normalise),
on its device. Each step does what torchvision's functional op does on a PIL image — the same PIL
calls with the same sizes, so the pixels are the same bits (tests/scoring/test_decoders.py proves it
against open_clip's own preprocess). Importing torchvision in every decoder would cost 3 CPU-s and
~0.9 GB each; a transform with a step not known here ships that step pickled instead (`Opaque`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from PIL import Image


@dataclass(frozen=True)
class Resize:
    """torchvision's Resize on a PIL image: `size` (one int: the shorter side; two: (h, w)), capped by
    `max_size` on the longer side; PIL's `resample` filter."""
    size: tuple[int, ...]
    resample: int
    max_size: int | None = None

    def __call__(self, image: Image.Image) -> Image.Image:
        w, h = image.size
        if len(self.size) == 2:
            new_h, new_w = self.size
        else:
            short, long = (w, h) if w <= h else (h, w)
            new_short, new_long = self.size[0], int(self.size[0] * long / short)
            if self.max_size is not None and new_long > self.max_size:
                new_short, new_long = int(self.max_size * new_short / new_long), self.max_size
            new_w, new_h = (new_short, new_long) if w <= h else (new_long, new_short)
        return image if (new_w, new_h) == (w, h) else image.resize((new_w, new_h), self.resample)


@dataclass(frozen=True)
class CenterCrop:
    """torchvision's CenterCrop on a PIL image: a crop larger than the image pads it with zeros
    (PIL's crop outside the image gives zeros, where torchvision pads then crops)."""
    size: tuple[int, int]  # (h, w)

    def __call__(self, image: Image.Image) -> Image.Image:
        (w, h), (ch, cw) = image.size, self.size
        if (w, h) == (cw, ch):
            return image
        left = -((cw - w) // 2) if cw > w else int(round((w - cw) / 2.0))
        top = -((ch - h) // 2) if ch > h else int(round((h - ch) / 2.0))
        return image.crop((left, top, left + cw, top + ch))


@dataclass(frozen=True)
class Crop:
    """PIL's crop to a box (left, upper, right, lower): a region of the image (MMMEB's visual grounding)."""
    box: tuple[int, int, int, int]

    def __call__(self, image: Image.Image) -> Image.Image:
        return image.crop(self.box)


@dataclass(frozen=True)
class Convert:
    mode: str

    def __call__(self, image: Image.Image) -> Image.Image:
        return image.convert(self.mode)


@dataclass(frozen=True)
class Opaque:
    """A step of the model's own that has no PIL twin here: run as it is (its library imported in
    the decoder, at one torch thread)."""
    step: Any

    def __call__(self, image: Image.Image) -> Image.Image:
        import torch

        if torch.get_num_threads() != 1:
            torch.set_num_threads(1)
        return self.step(image)


@dataclass(frozen=True)
class PilRecipe:
    """The steps, and `keep`: the largest side length the steps resize to — the smallest a JPEG may
    be drafted at (`fast` mode) without the resize having to upsample."""
    steps: tuple[Any, ...]
    keep: int | None = None

    def __call__(self, image: Image.Image) -> np.ndarray:
        for step in self.steps:
            image = step(image)
        return np.asarray(image, dtype=np.uint8)


# The steps a recipe record may hold (models/loader_facts.py): plain data, no code.
RECORDABLE = {cls.__name__: cls for cls in (Resize, CenterCrop, Crop, Convert)}


def recipe_to_data(recipe: PilRecipe) -> dict | None:
    """The recipe as JSON-able data; None when a step is the model's own (`Opaque`): not recordable."""
    steps = []
    for step in recipe.steps:
        if type(step).__name__ not in RECORDABLE or type(step) is not RECORDABLE[type(step).__name__]:
            return None
        steps.append({"step": type(step).__name__, **{k: list(v) if isinstance(v, tuple) else v
                                                      for k, v in step.__dict__.items()}})
    return {"steps": steps, "keep": recipe.keep}


def recipe_from_data(data: dict) -> PilRecipe:
    """recipe_to_data's inverse; a KeyError, TypeError or ValueError on data it did not write."""
    steps = []
    for raw in data["steps"]:
        fields = dict(raw)
        cls = RECORDABLE[fields.pop("step")]
        steps.append(cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in fields.items()}))
    keep = data["keep"]
    if keep is not None and not isinstance(keep, int):
        raise TypeError(f"keep: {keep!r}")
    return PilRecipe(tuple(steps), keep)


def output_bytes(recipe: PilRecipe) -> int | None:
    """An upper bound on one image's bytes after the recipe (RGB, uint8) when its last sizing step fixes
    both sides (a centre crop, a resize to (h, w)); None when the image's own shape decides."""
    for step in reversed(recipe.steps):
        if isinstance(step, CenterCrop) or (isinstance(step, Resize) and len(step.size) == 2):
            h, w = step.size
            return h * w * 3
        if isinstance(step, (Resize, Crop)):
            return None
    return None
