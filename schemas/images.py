"""Contract of `download-images`: every input column, then what the download made of the row.

One row per input row, whatever happened: `status` is `ok` or the reason there is no image
(img2dataset's convention, with reasons precise enough to act on). Reasons in TRANSIENT may go away
on their own; `--retry-failed` fetches only those rows again.
"""
from __future__ import annotations

import pyarrow as pa

from .contract import ContractError

OK = "ok"
TRANSIENT = frozenset({"http_5xx", "http_429", "timeout", "connection_error", "truncated"})
# Permanent reasons: http_<4xx code>, dns_error, too_large, not_an_image, corrupt_image,
# decompression_bomb, robots_noai, redirect_loop, too_many_redirects, invalid_url.

DOWNLOAD_FIELDS = [
    pa.field("status", pa.string(), nullable=False),
    pa.field("error_message", pa.string()),
    pa.field("final_url", pa.string()),  # after redirects
    pa.field("http_status", pa.int32()),  # of the last response; null when none came
    pa.field("attempts", pa.int32()),  # requests made for this row, redirects apart
    pa.field("bytes", pa.int64()),  # as downloaded
    pa.field("sha256", pa.string()),  # of the downloaded bytes
    pa.field("width", pa.int32()),  # of the image as stored (resized or not)
    pa.field("height", pa.int32()),
    pa.field("original_width", pa.int32()),  # as downloaded
    pa.field("original_height", pa.int32()),
    pa.field("format", pa.string()),  # Pillow's name of the stored format: JPEG, PNG, WEBP, …
    pa.field("exif_latitude", pa.float64()),  # EXIF GPS of the downloaded image, for geocoding
    pa.field("exif_longitude", pa.float64()),
    pa.field("exif_datetime", pa.string()),  # DateTimeOriginal (else DateTime) as EXIF writes it
    pa.field("dhash", pa.string()),  # 64-bit difference hash, hex; only with --perceptual-hash
    pa.field("image_path", pa.string()),  # relative to --out (files format), what score reads
]
IMAGE_BYTES = pa.field("image_bytes", pa.binary())  # --format parquet: the stored image itself
DUPLICATE_OF = pa.field("duplicate_of", pa.string())  # id of the first row with the same sha256
FIELD_NAMES = [f.name for f in DOWNLOAD_FIELDS]
# images.parquet (the ok rows) meets the images contract (schemas/tables.py IMAGES) for select-images,
# score and a release's `image_download:images.parquet`: `path` is image_path; `latitude`/`longitude`
# are the input's where it has them, else the EXIF GPS.
IMAGES_PATH = "path"


def download_schema(input_schema: pa.Schema, with_bytes: bool) -> pa.Schema:
    """The input's columns, then the download's (and the bytes column for --format parquet)."""
    return pa.schema(list(input_schema) + DOWNLOAD_FIELDS + ([IMAGE_BYTES] if with_bytes else []))


def check_input_columns(names: list[str], url_column: str, source: str) -> None:
    """The URL column must exist, and no input column may share a name with an output column."""
    if url_column not in names:
        raise ContractError(f"{source}: no column {url_column!r} (--url-column); columns: {', '.join(names)}")
    taken = [n for n in names if n in FIELD_NAMES + [IMAGE_BYTES.name, DUPLICATE_OF.name, IMAGES_PATH]]
    if taken:
        raise ContractError(f"{source}: column(s) {', '.join(taken)} would be overwritten by the download's; "
                            f"rename them with --map (e.g. --map {taken[0]}=source_{taken[0]})")
