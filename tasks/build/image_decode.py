"""Opening one image for a model, safely: inside the image root, a bounded pixel count, RGB, then the
model's own preprocess. A bad image gives a reason and a message, never an exception."""
from __future__ import annotations

import hashlib
import io
import os
import posixpath
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from PIL import Image, UnidentifiedImageError

from xmdata.runtime import storage


# The image root of paths resolved already (the clean tiers' `resolved_path`, absolute): every absolute path
# is under it, so the other checks (a file, not empty, the pixel limit) still run.
RESOLVED_PATHS = os.sep
DIGEST_CHUNK = 256  # images a caller reads and hashes at a time (image_digests of a chunk): what it holds at once


@dataclass(frozen=True)
class ImageRef:
    """Where an image is: a path relative to the image root, or its encoded bytes."""

    path: str | None = None
    data: bytes | None = None

    def describe(self) -> str:
        return self.path if self.data is None else f"<{len(self.data)} image bytes>"


@dataclass(frozen=True)
class Decoded:
    """A preprocessed image (pixels), or why there is none (reason, message). In scoring's device mode
    (decode_image's raw_jpeg) `pixels` is a JPEG's own file bytes, left for the model's process to decode."""

    pixels: Any = None
    reason: str | None = None
    message: str | None = None


def resolve_under_root(root: str, relative: str) -> str | None:
    """The path of `relative` under `root`, or None when its text climbs out of the root.

    The rule is on the text alone (`..` past the root, an absolute path elsewhere): links are the
    user's own and are followed wherever they lead — an image root that is a link to a big folder,
    per-file links as the Hugging Face cache makes them. An absolute path inside the root, or inside
    the folder the root links to, is accepted. The path returned is normalised, so the OS opens
    exactly what was checked (no `..` left to climb out of a linked folder's parent).
    """
    if storage.is_url(root):
        return _resolve_under_url_root(root, relative)
    root = os.path.abspath(root)
    full = os.path.normpath(os.path.join(root, relative))
    return full if any(_under(full, base) for base in {root, os.path.realpath(root)}) else None


def _under(path: str, base: str) -> bool:
    return path.startswith(base.rstrip(os.sep) + os.sep)


def _resolve_under_url_root(root: str, relative: str) -> str | None:
    """The same rule in an object store (no symlinks there): `..`, a leading `/`, another bucket or
    another scheme escape; an absolute URL that lands inside the root is accepted."""
    scheme, root_path = root.split("://", 1)
    root_path = posixpath.normpath(root_path)
    if "://" in relative:
        other_scheme, relative = relative.split("://", 1)
        if other_scheme != scheme:
            return None
        full = posixpath.normpath(relative)
    else:
        full = posixpath.normpath(posixpath.join(root_path, relative))
    return f"{scheme}://{full}" if full.startswith(root_path.rstrip("/") + "/") else None


def _object_image(url: str, ref: ImageRef) -> Any:
    """An image in an object store: its bytes, or a Decoded failure."""
    try:
        with storage.open_file(url, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return Decoded(reason="missing_image", message=f"{ref.path!r} does not exist")
    except OSError as exc:
        return Decoded(reason="unreadable_image", message=f"{ref.path!r}: {exc}")
    return io.BytesIO(data) if data else Decoded(reason="empty_image_file", message=f"{ref.path!r} is empty")


def _local_image(full: str, ref: ImageRef) -> Any:
    """A local image's path, or a Decoded failure."""
    try:
        size = os.stat(full).st_size
    except FileNotFoundError:
        return Decoded(reason="missing_image", message=f"{ref.path!r} does not exist")
    except OSError as exc:
        return Decoded(reason="unreadable_image", message=f"{ref.path!r}: {exc.strerror}")
    if not os.path.isfile(full):
        return Decoded(reason="missing_image", message=f"{ref.path!r} is not a file")
    if size == 0:
        return Decoded(reason="empty_image_file", message=f"{ref.path!r} is an empty file")
    return full


def image_source(ref: ImageRef, root: str | None) -> Any:
    """What PIL opens for `ref` (its bytes, or a local file's path), or a Decoded failure."""
    if ref.data is not None:
        if not ref.data:
            return Decoded(reason="empty_image_file", message="image bytes are empty")
        return io.BytesIO(ref.data)
    full = resolve_under_root(root, ref.path) if root else None
    if full is None:
        return Decoded(reason="path_outside_root", message=f"{ref.path!r} is not under the image root")
    return _object_image(full, ref) if storage.is_url(full) else _local_image(full, ref)


def open_image(ref: ImageRef, root: str | None, max_pixels: int, source: Any = None) -> Image.Image | Decoded:
    """The opened (not yet decoded) image, or a Decoded failure. `source`: image_source(ref, root), when
    the caller has it already."""
    source = image_source(ref, root) if source is None else source
    if isinstance(source, Decoded):
        return source
    try:
        image = Image.open(source)  # reads the header only: the size is known before any decoding
    except Image.DecompressionBombError as exc:
        return Decoded(reason="image_too_large", message=str(exc))
    except PermissionError as exc:
        return Decoded(reason="unreadable_image", message=f"{ref.describe()!r}: {exc.strerror}")
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        return Decoded(reason="corrupt_image", message=f"{ref.describe()}: {exc}")
    width, height = image.size
    if width * height > max_pixels:  # our limit, per call: PIL's global one is not relied on
        image.close()
        return Decoded(reason="image_too_large",
                       message=f"{ref.describe()}: {width}x{height} pixels, limit {max_pixels}")
    return image


def in_memory(source: Any, ref: ImageRef) -> Any:
    """image_source's result with a local file read into memory (a BytesIO), or a Decoded failure."""
    if not isinstance(source, str):
        return source
    try:
        with open(source, "rb") as f:
            return io.BytesIO(f.read())
    except PermissionError as exc:
        return Decoded(reason="unreadable_image", message=f"{ref.describe()!r}: {exc.strerror}")
    except OSError as exc:
        return Decoded(reason="unreadable_image", message=f"{ref.describe()!r}: {exc}")


# What every image reader refuses alike, by these reasons: outside the image root, over the pixel limit
# (read from the header), its decoder process dead twice. A reader with a reason of its own for the rest
# (the clean tiers', MMMEB's `unreadable_image`) gives that one to any other failure to read or decode.
READER_REASONS = ("image_too_large", "path_outside_root", "decoder_died")


def reader_reason(reason: str, own: str) -> str:
    return reason if reason in READER_REASONS else own


def decoder_died(ref: ImageRef, message: str) -> Decoded:
    """What an image whose decoder process died on it twice becomes (batch_loader's `died`)."""
    return Decoded(reason="decoder_died", message=f"{ref.describe()}: {message}")


def decode_image(ref: ImageRef, root: str | None, max_pixels: int,
                 preprocess: Callable[[Image.Image], Any], draft: int | None = None, raw_jpeg: bool = False) -> Decoded:
    """Open, check, convert to RGB and preprocess one image; thread-safe, never raises on bad data.

    draft: a JPEG is decoded at the smallest DCT scale (1/2, 1/4, 1/8) that keeps both sides at
    least this long (PIL's `Image.draft`; other formats decode whole). raw_jpeg: a JPEG that
    libjpeg and nvjpeg take as it is (`jpeg_as_is`) is not decoded here: its file bytes come back as
    `pixels` (`jpegs_decoded` finishes it); any other image is decoded here. The pixel limit applies
    to the size the file declares, before any decoding."""
    source = in_memory(image_source(ref, root), ref) if raw_jpeg else None  # the bytes are what it sends
    opened = open_image(ref, root, max_pixels, source)
    if isinstance(opened, Decoded):
        return opened
    try:
        with opened:
            if raw_jpeg and jpeg_as_is(opened, data := source.getvalue()):
                return Decoded(pixels=data)
            if draft is not None:
                opened.draft("RGB", (draft, draft))
            # An RGB image's convert("RGB") is a copy (PIL): 7.7 MB of a 1600x1200 photo (4 bytes a pixel), for nothing.
            return Decoded(pixels=preprocess(opened if opened.mode == "RGB" else opened.convert("RGB")))
    except Image.DecompressionBombError as exc:
        return Decoded(reason="image_too_large", message=str(exc))
    except Exception as exc:  # truncated or malformed data surfaces at decode time, as many kinds
        return Decoded(reason="corrupt_image", message=f"{ref.describe()}: {type(exc).__name__}: {exc}")


JPEG_END = b"\xff\xd9"  # the EOI marker


def jpeg_as_is(image: Image.Image, data: bytes) -> bool:
    """Whether decode_jpeg takes the file `data` of an opened `image` as it is: a JPEG, 8-bit RGB or grey
    (not CMYK or YCCK, which PIL converts its own way), ending with its EOI marker (not truncated)."""
    return image.format == "JPEG" and image.mode in ("RGB", "L") and data.endswith(JPEG_END)


def jpegs_decoded(decode: Callable[[list[bytes]], list[Any]], fallback: Callable[[ImageRef], Decoded],
                  refs: Sequence[ImageRef], batch: list[Decoded]) -> list[Decoded]:
    """A batch of decode_image(raw_jpeg=True) results finished in the model's process: its JPEG bytes
    decoded by `decode` (one call, None for each it refuses), a refused one decoded again by `fallback`
    (the PIL path: pixels, or the reason it gives); the other items as they came, in order."""
    at = [i for i, d in enumerate(batch) if isinstance(d.pixels, bytes)]
    if not at:
        return batch
    finished = list(batch)
    for i, pixels in zip(at, decode([batch[i].pixels for i in at]), strict=True):
        finished[i] = Decoded(pixels=pixels) if pixels is not None else fallback(refs[i])
    return finished


def image_sha256(ref: ImageRef, root: str | None) -> str | None:
    """The sha256 of an image's bytes (the memo's key for what is computed from an image); None when
    they cannot be read here (its decode says why)."""
    if ref.data is not None:
        return hashlib.sha256(ref.data).hexdigest() if ref.data else None
    full = resolve_under_root(root, ref.path) if root else None
    if full is None:
        return None
    try:
        with storage.open_file(full, "rb") as f:
            return hashlib.file_digest(f, "sha256").hexdigest()
    except OSError:
        return None


def image_digests(refs: list[ImageRef], root: str | None) -> list[str | None]:
    """image_sha256 of each, read and hashed in threads (both release the GIL), one a core."""
    from concurrent.futures import ThreadPoolExecutor

    if not refs:
        return []
    with ThreadPoolExecutor(min(len(refs), len(os.sched_getaffinity(0))), thread_name_prefix="xmdata-digest") as pool:
        return list(pool.map(lambda ref: image_sha256(ref, root), refs))
