"""Exact image selection: over all languages at once, lexicographically maximise the number of
picks, then region-level picks, then country-level, then continent-level.

Images with the same level for every language (the same row of the place × language level
matrix) are interchangeable, so the problem is a transportation problem between a few hundred
image groups and the languages, even for millions of candidates:

    source -> group g          capacity |g|
    group g -> language l      capacity |g|, cost -W[level of g for l]   (region, country, continent)
    group g -> ANYWHERE        capacity |g|                              (global: every image serves)
    ANYWHERE -> language l     capacity K
    language l -> sink         capacity K

networkx's max_flow_min_cost finds the maximum flow of least cost; with T = K x languages picks at
most, W = ((T+1)^2, T+1, 1) makes one more region pick outweigh any number of country and continent
picks (T(T+1) + T < (T+1)^2), and so on down. Integer capacities give an integral optimum.
Which images fill a group's counts is then seeded (random or spread), like the greedy.
"""
from __future__ import annotations

import networkx as nx
import numpy as np
import pyarrow as pa

from .language_areas import GLOBAL, LanguageAreas
from xmdata.tasks.selection.candidates import Within, pick, prepare_candidates, selection_table


def solve_group_flow(group_levels: np.ndarray, group_sizes: np.ndarray, per_language: int):
    """{(group, language, level): count} of an optimal assignment, global picks included."""
    groups, languages = group_levels.shape
    total = per_language * languages
    weight = [(total + 1) ** 2, total + 1, 1]
    graph = nx.DiGraph()
    graph.add_nodes_from(["source", "sink", "anywhere"])
    for g in range(groups):
        graph.add_edge("source", ("group", g), capacity=int(group_sizes[g]), weight=0)
        graph.add_edge(("group", g), "anywhere", capacity=int(group_sizes[g]), weight=0)
        for j in np.flatnonzero(group_levels[g] < GLOBAL):
            graph.add_edge(("group", g), ("language", int(j)), capacity=int(min(group_sizes[g], per_language)),
                           weight=-weight[group_levels[g, j]])
    for j in range(languages):
        graph.add_edge("anywhere", ("language", j), capacity=per_language, weight=0)
        graph.add_edge(("language", j), "sink", capacity=per_language, weight=0)
    flow = nx.max_flow_min_cost(graph, "source", "sink")
    counts = {}
    for g in range(groups):
        for node, amount in flow[("group", g)].items():
            if amount and node != "anywhere":
                counts[g, node[1], int(group_levels[g, node[1]])] = amount
    from_anywhere = {j: flow["anywhere"][("language", j)] for j in range(languages)}
    into_anywhere = {g: flow[("group", g)]["anywhere"] for g in range(groups)}
    return counts, into_anywhere, from_anywhere


def select_optimal(candidates: pa.Table, areas: LanguageAreas, per_language: int,
                   within: Within = "random", seed: int = 0) -> pa.Table:
    """Optimal selection over geocoded candidates -> one row per (language, image) with its level."""
    c = prepare_candidates(candidates, areas)
    group_levels, group_of_place = np.unique(c.place_levels, axis=0, return_inverse=True)
    group = group_of_place.reshape(-1)[c.place]
    sizes = np.bincount(group, minlength=len(group_levels))
    counts, into_anywhere, from_anywhere = solve_group_flow(group_levels, sizes, per_language)
    cells = c.cell if within == "spread" else None
    members = np.split(np.argsort(group, kind="stable"), np.cumsum(sizes)[:-1]) if len(sizes) else []
    rows, languages, levels, anywhere = [], [], [], []
    for g, images in enumerate(members):
        wanted = sorted((j, level, n) for (gg, j, level), n in counts.items() if gg == g)
        total = sum(n for _, _, n in wanted) + into_anywhere[g]
        chosen = pick(images, total, np.random.default_rng([seed, g]), cells)
        start = 0
        for j, level, n in wanted:  # consecutive slices of one seeded order: disjoint by construction
            rows.append(chosen[start:start + n])
            languages.append(np.full(n, j))
            levels.append(np.full(n, level))
            start += n
        anywhere.append(chosen[start:])
    pool = np.concatenate([np.zeros(0, np.int64), *anywhere])
    pool = pick(pool, len(pool), np.random.default_rng([seed, len(group_levels)]), cells)
    start = 0
    for j in range(len(c.codes)):
        n = from_anywhere[j]
        rows.append(pool[start:start + n])
        languages.append(np.full(n, j))
        levels.append(np.full(n, GLOBAL))
        start += n
    return selection_table(c, np.concatenate(rows), np.concatenate(languages), np.concatenate(levels),
                           "optimal", seed)
