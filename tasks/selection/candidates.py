"""What both image-selection strategies share: candidates reduced to places, seeded picks, the output.

A candidate is a geocoded image (xmdata.tasks.selection.geocode). Images at the same (country, admin1,
continent) serve every language at the same level, so levels are computed once per distinct place
(a few thousand), not per image; an image with a geo_flag is a place of its own, global only.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np
import polars as pl
import pyarrow as pa

from .language_areas import GLOBAL, LEVELS, LanguageAreas

Within = Literal["random", "spread"]
SPREAD_CELL_DEGREES = 0.5  # ~55 km at the equator: a city and its suburbs fall in one or two cells
PLACE_COLUMNS = ["country", "admin1", "continent"]
OUTPUT_COLUMNS = ["language", "image_id", "latitude", "longitude", "country", "admin1", "continent",
                  "level", "strategy", "seed"]


@dataclass(frozen=True)
class Candidates:
    table: pa.Table            # id, latitude, longitude, country, admin1, continent
    place: np.ndarray          # (images,) index into place_levels
    place_levels: np.ndarray   # (places, languages) int8, index into LEVELS
    cell: np.ndarray           # (images,) grid cell id, for `spread`
    codes: list[str]           # languages, in the areas' order


def prepare_candidates(candidates: pa.Table, areas: LanguageAreas) -> Candidates:
    missing = {"id", "latitude", "longitude", *PLACE_COLUMNS} - set(candidates.column_names)
    if missing:
        raise ValueError(f"image selection needs geocoded candidates; missing columns {sorted(missing)} "
                         "(run xmdata.tasks.selection.geocode.geocode first)")
    frame = pl.from_arrow(candidates.select(["id", "latitude", "longitude", *PLACE_COLUMNS]))
    flagged = (pl.from_arrow(candidates.column("geo_flag")).is_not_null() if "geo_flag" in candidates.column_names
               else pl.Series([False] * candidates.num_rows))
    keys = frame.select([pl.col(c).fill_null("") for c in PLACE_COLUMNS]).with_columns(flagged=flagged)
    places = keys.unique().sort(keys.columns).with_row_index("place")
    place = keys.with_row_index("row").join(places, on=keys.columns, how="left").sort("row")["place"]
    levels = areas.place_levels(places["country"], places["admin1"], places["continent"])
    levels[places["flagged"].to_numpy()] = GLOBAL  # geo-flagged: a guess of a place, global only
    lat, lon = frame["latitude"].to_numpy(), frame["longitude"].to_numpy()
    columns = int(360 / SPREAD_CELL_DEGREES) + 1
    cell = (np.floor((lat + 90) / SPREAD_CELL_DEGREES) * columns + np.floor((lon + 180) / SPREAD_CELL_DEGREES))
    return Candidates(frame.to_arrow(), place.to_numpy().astype(np.int64), levels, cell.astype(np.int64),
                      areas.codes)


def spread_order(cells: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Positions in round-robin order over cells (cells in random order, random image within a cell)."""
    cell_ids, cell_index = np.unique(cells, return_inverse=True)
    by_cell = np.lexsort((rng.random(len(cells)), cell_index))
    sorted_cells = cell_index[by_cell]
    starts = np.flatnonzero(np.r_[True, sorted_cells[1:] != sorted_cells[:-1]])
    rank = np.empty(len(cells), np.int64)
    rank[by_cell] = np.arange(len(cells)) - np.repeat(starts, np.diff(np.r_[starts, len(cells)]))
    return np.lexsort((rng.random(len(cell_ids))[cell_index], rank))


def pick(idx: np.ndarray, need: int, rng: np.random.Generator, cells: np.ndarray | None = None,
         tiers: np.ndarray | None = None) -> np.ndarray:
    """Up to `need` of idx, seeded: lowest tier first; within a tier at random or spread over cells."""
    need = min(need, len(idx))
    if need <= 0:
        return idx[:0]
    if tiers is not None:
        parts, got = [], 0
        for tier in np.unique(tiers):
            parts.append(pick(idx[tiers == tier], need - got, rng, cells))
            got += len(parts[-1])
            if got == need:
                break
        return np.concatenate(parts)
    if cells is None:
        return idx[rng.choice(len(idx), size=need, replace=False)]
    return idx[spread_order(cells[idx], rng)[:need]]


def selection_table(c: Candidates, rows: np.ndarray, language: np.ndarray, level: np.ndarray,
                    strategy: str, seed: int) -> pa.Table:
    """The output: one row per chosen image, sorted by language, level, image id."""
    chosen = pl.from_arrow(c.table.take(pa.array(rows, pa.int64()))).rename({"id": "image_id"})
    chosen = chosen.with_columns(
        language=pl.Series(np.array(c.codes, dtype=object)[language], dtype=pl.String),
        level=pl.Series(np.array(LEVELS, dtype=object)[level], dtype=pl.String),
        level_rank=pl.Series(level, dtype=pl.Int8), strategy=pl.lit(strategy), seed=pl.lit(seed, pl.Int64))
    return chosen.sort(["language", "level_rank", "image_id"]).select(OUTPUT_COLUMNS).to_arrow()
