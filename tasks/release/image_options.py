"""The options of images inside a release (tasks/release/embed_images.py), declared once: a release
config's top-level `embed_images:` and `image_max_side:`, the `--embed-images` and `--image-max-side`
flags of `xmdata release` and `xmdata demo`, and the release flow's form. Light: no pyarrow, for --help."""
from __future__ import annotations

from pydantic import Field, model_validator

from xmdata.runtime.params import Strict


class ImageEmbedding(Strict):
    """Declared once: the release config's top-level keys and `xmdata release`/`demo` flags."""

    embed_images: bool = Field(False, description="put each row's image into the release's tables (an `image` "
                               "column, the Hugging Face Image struct {bytes, path}), so the Hub's viewer shows it")
    image_max_side: int | None = Field(None, ge=16, le=65536, description="with --embed-images: an image whose "
                                       "longer side is over this is stored as a JPEG of that size (default: the "
                                       "original bytes)")

    def given(self) -> dict:
        """The fields set (a flag given, a key written): what a release's overrides record."""
        return self.model_dump(include=self.model_fields_set)


class EmbeddedImagesConfig(ImageEmbedding):
    """The two keys as the merged release config holds them (the config's, the flags over them): only there
    is the rule across them checked, since a flag alone (--image-max-side over a config that embeds) is
    half of what the release runs with."""

    @model_validator(mode="after")
    def _max_side_embeds(self):
        if self.image_max_side is not None and not self.embed_images:
            raise ValueError("image_max_side resizes embedded images: set embed_images too")
        return self
