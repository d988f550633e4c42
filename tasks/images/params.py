"""`download-images` options, declared once: the CLI flags, the flow's form and what a shard runs with.

Two parts. `DownloadImagesParams` decides what a row's outcome and stored image are: it is hashed into
the completion records, so changing it redoes the shards. `HttpOptions` (nested as `http`) decides
only how fast and how politely the same URLs are fetched: it is left out of the hash, so a rerun with
more threads or longer timeouts skips the finished shards (`--retry-failed` fetches the transient
failures again). Light: pydantic only, so `xmdata --help` stays fast.
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from xmdata.runtime.params import Params
from xmdata.tasks.stage_params import DEFAULT_MAX_PIXELS


class HttpOptions(Params):
    threads: int = Field(64, ge=1, le=2048, description="requests in flight per shard")
    per_host: int = Field(16, ge=1, le=1024, description="connections at once to one host, per shard")
    connect_timeout: float = Field(10.0, gt=0, le=600, description="seconds to connect")
    read_timeout: float = Field(30.0, gt=0, le=3600, description="seconds for the whole response once connected")
    retries: int = Field(3, ge=0, le=20, description="retries of 429, 5xx, timeouts and cut connections")
    backoff: float = Field(1.0, ge=0, le=600, description="seconds before the first retry; doubles each time")
    max_retry_after: float = Field(120.0, ge=0, le=86_400,
                                   description="longest Retry-After honoured; a longer one ends the row as http_429")


class DownloadImagesParams(Params):
    url_column: str = Field("url", min_length=1, description="column holding each row's image URL")
    caption_column: str | None = Field(None, min_length=1, description="webdataset: column whose text each "
                                       "sample also holds as `<key>.txt` (img2dataset's caption_col), the caption "
                                       "open_clip's training reads; rows with no text get none")
    format: Literal["files", "webdataset", "parquet"] = Field(
        "files", description="files under OUT/images (image_path), tar shards, or bytes in a column")
    max_bytes: int = Field(50_000_000, ge=1, description="larger responses are refused as too_large")
    max_redirects: int = Field(10, ge=0, le=100, description="redirects followed per URL")
    max_pixels: int = Field(DEFAULT_MAX_PIXELS, ge=1, description="more pixels: decompression_bomb, never decoded")
    respect_noai: bool = Field(True, description="honour X-Robots-Tag noai / noimageai (status robots_noai)")
    resize: int | None = Field(None, ge=1, le=16_384, description="re-encode to this size (default: keep originals)")
    resize_mode: Literal["keep_ratio", "center_crop", "border"] = Field(
        "keep_ratio", description="keep_ratio: shorter side N; center_crop: N x N from the centre; "
        "border: longer side N, padded to N x N")
    quality: int = Field(95, ge=1, le=100, description="JPEG quality of a resized image")
    perceptual_hash: bool = Field(False, description="add dhash, a 64-bit difference hash of every image")
    http: HttpOptions = HttpOptions()

    @model_validator(mode="after")
    def _resize_options_need_resize(self):
        """Another mode or quality without --resize would be silently unused (defaults, as a form sends
        them, pass)."""
        fields = type(self).model_fields
        changed = [n for n in ("resize_mode", "quality") if getattr(self, n) != fields[n].default]
        if self.resize is None and changed:
            raise ValueError("--resize-mode and --quality apply only with --resize N")
        return self

    @model_validator(mode="after")
    def _caption_column_needs_webdataset(self):
        """files and parquet keep every input column beside the image: a caption column adds nothing there."""
        if self.caption_column is not None and self.format != "webdataset":
            raise ValueError("--caption-column applies only with --format webdataset (files and parquet keep "
                             "every input column)")
        return self

    def hashed(self) -> dict:
        """What a completion record's params hash covers: everything but `http`."""
        return self.model_dump(exclude={"http"})
