"""The `mmmeb:` section of a release config: which imports feed which MMMEB source, the languages,
pool sizes as the paper sets them, and the systems whose embeddings are scored on the pools."""
from __future__ import annotations

from typing import Literal

from pydantic import Field

from xmdata.models.base import ModelSpec, looks_like_path
from xmdata.runtime.params import Strict
from xmdata.tasks.stage_params import Pretrained


class MmmebSources(Strict):
    """Import names (of the config's `imports:`) per source; a source with none is a missing task."""
    xm3600: list[str] = []
    xtd10: list[str] = []
    maxm: list[str] = []
    flickr30k_entities: list[str] = []
    imagenet: list[str] = []


class EmbeddingSystem(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$", description="names the system's columns and files")
    backend: Literal["open_clip", "hf", "last_token"] = Field(
        "open_clip", description="open_clip, a Hugging Face CLIP-like model (get_text_features / "
        "get_image_features) by hub id or path, or a decoder's last-token state (text only)")
    model: str
    pretrained: Pretrained = None
    revision: str | None = Field(None, description="hub revision (hf)")
    device: str = "cpu"

    def spec(self) -> ModelSpec:
        import os

        path = os.path.abspath(os.path.expanduser(self.model)) if looks_like_path(self.model) else self.model
        options = {"pretrained": self.pretrained} if self.pretrained else {}
        return ModelSpec(self.backend, path, self.revision, device=self.device, options=options)


class MmmebConfig(Strict):
    languages: list[str] = Field(["en", "fr", "de", "it", "es"], description="the paper's five")
    sources: MmmebSources = MmmebSources()
    imagenet_first: int = Field(1000, ge=1, description="the first N validation images (the paper: 1,000)")
    pool_size: int = Field(1000, ge=2, description="1 gold + 999 distractors for groups of >= small_below queries")
    small_pool_size: int = Field(100, ge=2, description="1 gold + 99 below that")
    small_below: int = Field(1000, ge=1)
    systems: list[EmbeddingSystem] = Field(default_factory=list, description="scored on the same pools; "
                                           "the first is compared with each other by McNemar's test")
