"""What a downloaded body is: sniffed from its first bytes (never the URL's extension or the server's
Content-Type), its size read from the header before any pixel is decoded (decompression bombs stop
there), then decoded once to prove it whole; EXIF GPS and time, an optional difference hash and an
optional resize come from the same decode. Runs on the decode threads, never the network ones."""
from __future__ import annotations

import io
from dataclasses import dataclass

from PIL import Image, ImageOps

from xmdata.tasks.selection.geocode import gps_degrees

from .params import DownloadImagesParams

# Magic bytes of the formats Pillow decodes; HTML, JSON or an error page served as image/jpeg fail here.
SIGNATURES = ((b"\xff\xd8\xff", "JPEG"), (b"\x89PNG\r\n\x1a\n", "PNG"), (b"GIF87a", "GIF"), (b"GIF89a", "GIF"),
              (b"BM", "BMP"), (b"II*\x00", "TIFF"), (b"MM\x00*", "TIFF"))
EXTENSIONS = {"JPEG": "jpg", "PNG": "png", "GIF": "gif", "WEBP": "webp", "BMP": "bmp", "TIFF": "tif"}


@dataclass
class Inspected:
    status: str
    error: str | None = None
    width: int | None = None
    height: int | None = None
    original_width: int | None = None
    original_height: int | None = None
    format: str | None = None
    exif_latitude: float | None = None
    exif_longitude: float | None = None
    exif_datetime: str | None = None
    dhash: str | None = None
    stored: bytes | None = None  # what is written: the download itself, or its re-encoding


def sniff(data: bytes) -> str | None:
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "WEBP"
    return next((name for magic, name in SIGNATURES if data.startswith(magic)), None)


def inspect(data: bytes, params: DownloadImagesParams) -> Inspected:
    """Never raises: a body that is no image, or a broken one, gets its reason."""
    kind = sniff(data)
    if kind is None:
        head = data[:40].decode("latin-1").replace("\n", " ")
        return Inspected("not_an_image", f"{len(data)} bytes starting {head!r}: no image signature")
    try:
        image = Image.open(io.BytesIO(data))
        width, height = image.size
        if width * height > params.max_pixels:
            return Inspected("decompression_bomb", f"{width}x{height} pixels > --max-pixels {params.max_pixels}",
                             original_width=width, original_height=height, format=image.format)
        exif = image.getexif()
        if params.resize is None and image.format == "JPEG":
            image.draft(image.mode, (max(1, width // 8), max(1, height // 8)))  # whole stream, 1/64 of the pixels
        image.load()
    except Image.DecompressionBombError as exc:  # past Pillow's own limit (a --max-pixels above ~179 M)
        return Inspected("decompression_bomb", str(exc)[:300], format=kind)
    except Exception as exc:  # noqa: BLE001 - Pillow's plugins raise many kinds on hostile bytes
        return Inspected("corrupt_image", f"{kind}: {type(exc).__name__}: {exc}"[:300])
    found = Inspected("ok", width=width, height=height, original_width=width, original_height=height,
                      format=image.format, stored=data)
    found.exif_latitude, found.exif_longitude, found.exif_datetime = exif_gps_time(exif)
    if params.perceptual_hash:
        found.dhash = difference_hash(image)
    if params.resize is not None:
        from .resize import resized

        found.stored, found.format, (found.width, found.height) = resized(image, params)
    return found


def exif_gps_time(exif: Image.Exif) -> tuple[float | None, float | None, str | None]:
    """Decimal degrees (south and west negative) and DateTimeOriginal (else DateTime); None where absent."""
    when = exif.get_ifd(0x8769).get(36867) or exif.get(306)
    when = str(when).strip("\x00 ") or None if when is not None else None
    try:
        lat, lon = gps_degrees(exif.get_ifd(0x8825))
    except (KeyError, TypeError, ValueError, ZeroDivisionError):
        return None, None, when
    if not (-90 <= lat <= 90 and -180 <= lon <= 180):
        return None, None, when
    return lat, lon, when


def difference_hash(image: Image.Image) -> str:
    """dHash: 64 bits, one per horizontally adjacent pair of a 9x8 grey thumbnail, as 16 hex digits."""
    small = ImageOps.exif_transpose(image).convert("L").resize((9, 8), Image.Resampling.LANCZOS)
    pixels = small.tobytes()  # mode L: one byte per pixel, row by row
    bits = [pixels[r * 9 + c] > pixels[r * 9 + c + 1] for r in range(8) for c in range(8)]
    return f"{sum(1 << i for i, b in enumerate(bits) if b):016x}"
