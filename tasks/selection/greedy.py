"""Crossmodal-3600's greedy image selection (Thapliyal et al., 2022, sec. 2.2), as published.

Languages are served one at a time in increasing order of their candidate pool (images inside the
language's region, counted once over all candidates before any pick), ties by language code. Each
takes up to K unassigned images from its region; when the region runs dry it backs off to its
countries, then its continents, then anywhere. Each image serves at most one language.

Two choices the paper leaves open, made here:
- at a back-off level, among the eligible images those that no later language could use at a
  better level than global go first, then those a later language could use only at continent
  level, and so on (tiers): a back-off pick should not spend what a later language needs;
- within a level (and tier) the pick is seeded: uniformly at random, or `spread` round-robin over
  0.5° grid cells so that 100 images do not all come from one city.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .language_areas import GLOBAL, LEVELS, LanguageAreas
from xmdata.tasks.selection.candidates import Within, pick, prepare_candidates, selection_table


def greedy_order(region_pool: np.ndarray, codes: list[str]) -> list[int]:
    """Language positions, smallest region pool first, ties by code."""
    return sorted(range(len(codes)), key=lambda j: (int(region_pool[j]), codes[j]))


def select_greedy(candidates: pa.Table, areas: LanguageAreas, per_language: int,
                  within: Within = "random", seed: int = 0) -> pa.Table:
    """Greedy selection over geocoded candidates -> one row per (language, image) with its level."""
    c = prepare_candidates(candidates, areas)
    images_per_place = np.bincount(c.place, minlength=len(c.place_levels))
    region_pool = images_per_place @ (c.place_levels == 0)
    order = greedy_order(region_pool, c.codes)
    cells = c.cell if within == "spread" else None
    taken = np.zeros(len(c.place), bool)
    rows, languages, levels = [], [], []
    for position, j in enumerate(order):
        later = order[position + 1:]
        # Best level any later language could use each place at: the back-off tiers (worse first).
        later_best = c.place_levels[:, later].min(axis=1) if later else np.full(len(c.place_levels), GLOBAL)
        level_of_image = c.place_levels[:, j][c.place]
        need = per_language
        for level in range(len(LEVELS)):
            if need == 0:
                break
            idx = np.flatnonzero((level_of_image == level) & ~taken)
            tiers = None if level == 0 else -later_best[c.place[idx]].astype(np.int64)
            rng = np.random.default_rng([seed, j, level])
            chosen = pick(idx, need, rng, cells, tiers)
            taken[chosen] = True
            need -= len(chosen)
            rows.append(chosen)
            languages.append(np.full(len(chosen), j))
            levels.append(np.full(len(chosen), level))
    return selection_table(c, np.concatenate(rows), np.concatenate(languages), np.concatenate(levels),
                           "greedy", seed)
