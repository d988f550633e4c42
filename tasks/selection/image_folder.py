"""An image folder as an IMAGES table: GPS read from each photo's EXIF, failures kept as rejects."""
from __future__ import annotations

import os

import pyarrow as pa

from xmdata.schemas import IMAGES, ContractError

from .geocode import read_exif_gps
from xmdata.tasks.build.rejects import concat_rejects, make_rejects

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".tif", ".tiff", ".webp", ".heic")


def require_photos(folder: str) -> None:
    """A folder without a single photo file is a wrong folder, not an empty selection."""
    if not any(n.lower().endswith(IMAGE_SUFFIXES) for _, _, names in os.walk(folder) for n in names):
        raise ContractError(f"{folder}: a folder with no photos ({', '.join(IMAGE_SUFFIXES)}); give a "
                            f"photo folder or a table with id, latitude, longitude")


def images_from_folder(folder: str) -> tuple[pa.Table, pa.Table]:
    """(one row per photo with GPS, rejects with the reason EXIF gave none). Ids are relative paths."""
    require_photos(folder)
    rows, rejects = [], []
    for root, _, names in sorted(os.walk(folder)):
        for name in sorted(names):
            if not name.lower().endswith(IMAGE_SUFFIXES):
                continue
            # A link is the user's own (a big folder kept elsewhere, the Hugging Face cache's per-file
            # links): followed wherever it leads; a broken one is an unreadable photo.
            path = os.path.join(root, name)
            image_id = os.path.relpath(path, folder)
            lat, lon, reason = read_exif_gps(path)
            if reason is None:
                rows.append({"id": image_id, "latitude": lat, "longitude": lon, "path": path})
            else:
                reason_code, _, detail = reason.partition(":")
                rejects.append(make_rejects("exif", reason_code, [image_id], [detail.strip() or None]))
    table = pa.Table.from_pylist(rows, schema=pa.schema([IMAGES.schema.field(n) for n in
                                                        ("id", "latitude", "longitude", "path")]))
    return table, concat_rejects(rejects)
