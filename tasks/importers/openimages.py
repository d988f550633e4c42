"""Open Images image metadata: `*-images-with-rotation.csv` (V4 and later: ImageID, Subset, OriginalURL,
OriginalLandingURL, License, AuthorProfileURL, Author, Title, OriginalSize, OriginalMD5,
Thumbnail300KURL, Rotation) or the older `images.csv` without Rotation. GPS is not in these files:
it comes from a coordinates table joined by ImageID, else from the EXIF of the downloaded photo."""
from __future__ import annotations

import math
from collections import Counter
import os
import re

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.schemas import IMAGES
from xmdata.schemas.readers import read_any

from xmdata.tasks.selection.geocode import read_exif_gps
from .base import Imported, files_in, layout_error, reject, rows_table
from .options import ImportOptions

FORMAT = "openimages"
REQUIRED = ("ImageID", "Subset", "OriginalURL", "OriginalLandingURL", "License", "AuthorProfileURL", "Author",
            "Title")
EXPECTED = "a CSV with header " + ",".join(REQUIRED) + ",…"
RENAMES = {"ImageID": "id", "OriginalURL": "url", "License": "license"}


# Where the generic rule below reads a header wrong: 300K is one token (a 300-kilopixel thumbnail).
SNAKE_NAMES = {"Thumbnail300KURL": "thumbnail300k_url"}


def snake(name: str) -> str:
    """The published header's name in snake case: OriginalLandingURL -> original_landing_url."""
    if name in SNAKE_NAMES:
        return SNAKE_NAMES[name]
    return re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", name).lower()


def read_metadata(path: str) -> pa.Table:
    table = read_any(path)  # every value as text; --map has renamed the columns already
    missing = [c for c in REQUIRED if c not in table.column_names]
    if missing:
        header = open(path, encoding="utf-8").readline()
        raise layout_error(FORMAT, path, EXPECTED, 1, header, f"no column {', '.join(missing)}")
    return table


def coordinates(path: str | None) -> dict[str, tuple]:
    """ImageID -> (Latitude, Longitude) as written; read through --map like every input."""
    if not path:
        return {}
    table = read_any(path)
    names = {n.lower(): n for n in table.column_names}
    key, lat, lon = (names.get(a) or names.get(b) for a, b in (("imageid", "id"), ("latitude", "lat"),
                                                               ("longitude", "lon")))
    if not (key and lat and lon):
        raise layout_error(FORMAT, path, "a coordinates table with ImageID, Latitude, Longitude (or --map)",
                           problem=f"columns are {', '.join(table.column_names)}")
    return dict(zip(table.column(key).to_pylist(), zip(table.column(lat).to_pylist(), table.column(lon).to_pylist())))


def _number(value) -> float | None:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def read_openimages(source: str, options: ImportOptions) -> Imported:
    files = files_in(source, "*images*.csv", FORMAT, "*images*.csv metadata file")
    tables = [read_metadata(p) for p in files]  # every file's layout is checked before any row is used
    gps = coordinates(options.coordinates)
    table = pa.concat_tables(tables, promote_options="permissive")
    rows_read = table.num_rows
    subsets = [s.strip() for s in (options.subsets or "").split(",") if s.strip()]
    if subsets:
        table = table.filter(pc.is_in(table.column("Subset"), pa.array(subsets)))
    rows, rejects, sources, exif_failures = [], [], {"coordinates": 0, "exif": 0, "none": 0}, Counter()
    for record in table.to_pylist():
        image_id = record["ImageID"]
        row = {RENAMES.get(k, snake(k)): v for k, v in record.items()}
        row.update(latitude=None, longitude=None, path=f"{image_id}.jpg", gps_source=None)
        if image_id in gps:
            lat, lon = (_number(v) for v in gps[image_id])
            if lat is None or lon is None or abs(lat) > 90 or abs(lon) > 180:
                rejects.append(reject(FORMAT, "bad_coordinates", [image_id], [f"{gps[image_id]}"]))
                continue
            row.update(latitude=lat, longitude=lon, gps_source="coordinates")
        elif options.images and os.path.isfile(os.path.join(options.images, row["path"])):
            lat, lon, reason = read_exif_gps(os.path.join(options.images, row["path"]))
            if reason is None:
                row.update(latitude=lat, longitude=lon, gps_source="exif")
            else:  # kept without GPS (select-images refuses it there, by reason); counted here
                exif_failures[reason.split(":")[0]] += 1
        sources[row["gps_source"] or "none"] += 1
        rows.append(row)
    out = rows_table(rows, IMAGES.schema)
    has_rotation = all("Rotation" in t.column_names for t in tables)
    layout = (f"{len(files)} metadata CSV(s), " + ("V4+ layout with Rotation" if has_rotation
                                                     else "layout without Rotation (images.csv, V2/V3)"))
    return Imported({"images": (out, IMAGES)}, layout, rows_read, rejects,
                    notes={"filtered_by_subset": rows_read - table.num_rows, "gps_from": sources,
                           "exif_without_gps": dict(sorted(exif_failures.items()))})
