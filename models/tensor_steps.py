"""A decode recipe (models/pil_steps.py) as torchvision tensor ops, and JPEGs decoded with them on the
model's device: scoring's `decode_mode="device"`, meant for CUDA (nvjpeg decodes a batch in one call;
on a CPU model libjpeg decodes them in the model's process, which is how the tests run it).

The pixels are close to PIL's, not the same bits: another JPEG decoder (IDCT, chroma upsampling) and
torch's antialiased resize in float, rounded back to uint8 (figures in docs/how-to/score.md).
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Sequence

from PIL import Image

from . import pil_steps

log = logging.getLogger(__name__)

# PIL's filters that torch resizes tensors with (its antialiased bicubic and bilinear follow PIL's); PIL's
# nearest is torchvision's NEAREST_EXACT. Lanczos, box and Hamming have no tensor twin.
INTERPOLATIONS = {Image.Resampling.NEAREST: "nearest-exact", Image.Resampling.BILINEAR: "bilinear",
                  Image.Resampling.BICUBIC: "bicubic"}


@dataclass(frozen=True)
class TensorRecipe:
    """A PilRecipe's Resize and CenterCrop steps run on a uint8 CHW RGB tensor, where it lies."""
    steps: tuple[pil_steps.Resize | pil_steps.CenterCrop, ...]

    @classmethod
    def of(cls, recipe: pil_steps.PilRecipe) -> "TensorRecipe | None":
        """The recipe's tensor twin, or None when a step has none (an `Opaque` step, a filter torch has
        not, a conversion to a mode other than RGB). Convert("RGB") is dropped: decode_jpeg gives RGB."""
        steps = []
        for step in recipe.steps:
            if isinstance(step, pil_steps.Resize) and step.resample in INTERPOLATIONS:
                steps.append(step)
            elif isinstance(step, pil_steps.CenterCrop):
                steps.append(step)
            elif not (isinstance(step, pil_steps.Convert) and step.mode == "RGB"):
                return None
        return cls(tuple(steps))

    def __call__(self, image: Any) -> Any:
        from torchvision.transforms import InterpolationMode
        from torchvision.transforms.v2 import functional as F

        for step in self.steps:
            if isinstance(step, pil_steps.Resize):
                image = F.resize(image, list(step.size), interpolation=InterpolationMode(INTERPOLATIONS[step.resample]),
                                 max_size=step.max_size if len(step.size) == 1 else None, antialias=True)
            else:
                image = F.center_crop(image, list(step.size))
        return image


# JPEGs decoded at once: each is whole (full size) on the device until its chunk is resized, so the
# memory a batch takes there is this many images at the pixel limit, not a batch's (256 on a large GPU).
DECODE_CHUNK = 16


def decode_jpegs(datas: Sequence[bytes], device: str, recipe: TensorRecipe) -> list[Any]:
    """Each JPEG decoded on `device` and run through `recipe`: a uint8 CHW RGB tensor there, or None for
    one that decode_jpeg refuses. DECODE_CHUNK at a time, each chunk in one call (batched by nvjpeg on
    CUDA) and resized before the next is decoded; one bad JPEG fails its chunk's call, so then each of
    that chunk is decoded alone."""
    import torch
    from torchvision.io import ImageReadMode, decode_jpeg

    out: list[Any] = []
    for start in range(0, len(datas), DECODE_CHUNK):
        encoded = [torch.frombuffer(bytearray(data), dtype=torch.uint8) for data in datas[start:start + DECODE_CHUNK]]
        if torch.device(device).type == "cuda":
            # nvjpeg's hardware decoder can write into memory that kernels queued on the caller's stream still
            # read (pytorch/vision#9606, torchvision 0.28): nothing left queued before it decodes.
            torch.cuda.current_stream(device).synchronize()
        try:
            images = decode_jpeg(encoded, mode=ImageReadMode.RGB, device=device)
        except Exception as exc:  # torchvision raises RuntimeError for bad data, but says nothing of other kinds
            images = [_alone(data, device) for data in encoded]
            log.info("decode_jpeg refused a batch of %d JPEGs (%s: %s): decoded one by one, %d refused again "
                     "(decoded by PIL)", len(encoded), type(exc).__name__, exc, images.count(None))
        out += [None if image is None else _steps(recipe, image) for image in images]
        del images
    return out


def _alone(data: Any, device: str) -> Any:
    from torchvision.io import ImageReadMode, decode_jpeg

    try:
        return decode_jpeg(data, mode=ImageReadMode.RGB, device=device)
    except Exception:  # the batch's message said why; this one goes to PIL
        return None


def _steps(recipe: TensorRecipe, image: Any) -> Any:
    try:
        return recipe(image)
    except Exception as exc:  # an image the tensor ops refuse (an empty side): PIL's path says what it is
        log.info("the tensor preprocess refused a decoded JPEG (%s: %s): decoded by PIL", type(exc).__name__, exc)
        return None
