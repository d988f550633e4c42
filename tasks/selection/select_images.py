"""Image selection for Crossmodal-3600-style datasets: K images per language, taken where it is spoken.

    selection = select_images(geocoded, load_language_areas(), strategy="greedy", per_language=100)
    summary = selection_summary(selection, areas, per_language=100)

`greedy` is the paper's algorithm (select_greedy.py); `optimal` the exact lexicographic optimum
(select_optimal.py). Both return the same columns: language, image_id, latitude, longitude,
country, admin1, continent, level (region | country | continent | global), strategy, seed.
With too few candidates for every language's K, both complete what they can; the summary's
`shortfall` says how many each language misses. Same inputs and seed -> identical output.
"""
from __future__ import annotations

from typing import Literal

import polars as pl
import pyarrow as pa

from .language_areas import LEVELS, LanguageAreas
from xmdata.tasks.selection.candidates import Within
from xmdata.tasks.selection.greedy import select_greedy
from xmdata.tasks.selection.optimal import select_optimal

Strategy = Literal["greedy", "optimal"]
STRATEGIES = {"greedy": select_greedy, "optimal": select_optimal}

__all__ = ["select_images", "select_greedy", "select_optimal", "selection_summary", "STRATEGIES"]


def select_images(candidates: pa.Table, areas: LanguageAreas, strategy: Strategy,
                  per_language: int, within: Within = "random", seed: int = 0) -> pa.Table:
    """K = per_language; the defaults users see are SelectImagesParams' (tasks/stage_params.py)."""
    if strategy not in STRATEGIES:
        raise ValueError(f"unknown selection strategy {strategy!r}; expected one of {sorted(STRATEGIES)}")
    return STRATEGIES[strategy](candidates, areas, per_language=per_language, within=within, seed=seed)


def selection_summary(selection: pa.Table, areas: LanguageAreas, per_language: int) -> pa.Table:
    """One row per language: images per level, selected, shortfall (K - selected)."""
    counts = (pl.from_arrow(selection).group_by(["language", "level"]).len()
              .pivot(on="level", index="language", values="len"))
    every = pl.DataFrame({"language": areas.codes})
    summary = every.join(counts, on="language", how="left")
    for level in LEVELS:
        if level not in summary.columns:
            summary = summary.with_columns(pl.lit(0, pl.UInt32).alias(level))
    summary = summary.with_columns([pl.col(level).fill_null(0).cast(pl.Int64) for level in LEVELS])
    summary = summary.with_columns(selected=pl.sum_horizontal(list(LEVELS)))
    return summary.with_columns(shortfall=per_language - pl.col("selected")).select(
        ["language", *LEVELS, "selected", "shortfall"]).to_arrow()
