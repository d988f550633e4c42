"""`--resize N`: img2dataset's three modes, checked against its resizer.py (1.47): keep_ratio makes the
shorter side N, center_crop then cuts N x N from the centre, border makes the longer side N and pads
to N x N with white. Re-encoded as JPEG (PNG when the image has transparency) at `quality`."""
from __future__ import annotations

import io

from PIL import Image, ImageOps

from .params import DownloadImagesParams


def resized(image: Image.Image, params: DownloadImagesParams) -> tuple[bytes, str, tuple[int, int]]:
    """(encoded bytes, format, (width, height)) of the resized image."""
    n, mode = params.resize, params.resize_mode
    image = ImageOps.exif_transpose(image)  # the pixels as shown, since EXIF is not carried over
    alpha = image.mode in ("RGBA", "LA", "PA") or (image.mode == "P" and "transparency" in image.info)
    image = image.convert("RGBA" if alpha else "RGB")
    width, height = image.size
    scale = n / (min(width, height) if mode in ("keep_ratio", "center_crop") else max(width, height))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    image = image.resize(size, Image.Resampling.LANCZOS)
    if mode == "center_crop":
        left, top = (size[0] - n) // 2, (size[1] - n) // 2
        image = image.crop((left, top, left + n, top + n))
    elif mode == "border":
        canvas = Image.new(image.mode, (n, n), (255, 255, 255, 0) if alpha else (255, 255, 255))
        canvas.paste(image, ((n - size[0]) // 2, (n - size[1]) // 2))
        image = canvas
    out = io.BytesIO()
    if alpha:
        image.save(out, "PNG", optimize=False)
    else:
        image.save(out, "JPEG", quality=params.quality)
    return out.getvalue(), "PNG" if alpha else "JPEG", image.size
