"""MMMEB candidate pools, drawn once and published as data, so every system is scored on the same
pools: per (task, dataset, language), each query's pool is its gold plus distractors drawn without
replacement from the group's other candidates, the gold at a random position.

Pool size as the paper sets it: 1 gold + 999 when the group has >= 1,000 queries, else 1 + 99;
every class for classification. A group with fewer candidates than that gets all of them:
pool = min(rule, candidates), and `mmmeb_tasks` records rule and size per group, so a small sample
build says how its pools were sized rather than hiding it."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.tasks.evaluation.retrieval import group_rng
from xmdata.tasks.mmmeb.tasks import PAPER_LANGUAGES, TASKS

ALL_CANDIDATES = ("C",)
QUERIES_SCHEMA = pa.schema([("id", pa.string()), ("task", pa.string()), ("dataset", pa.string()),
                            ("language", pa.string()), ("text", pa.string()), ("image", pa.string()),
                            ("box", pa.list_(pa.int32())), ("gold", pa.string()),
                            ("pool", pa.list_(pa.string())), ("gold_position", pa.int32())])
CANDIDATES_SCHEMA = pa.schema([("id", pa.string()), ("task", pa.string()), ("dataset", pa.string()),
                               ("language", pa.string()), ("text", pa.string()), ("image", pa.string()),
                               ("box", pa.list_(pa.int32()))])


def pool_rule(task: str, queries: int, candidates: int, large: int, small: int, small_below: int) -> int:
    if task in ALL_CANDIDATES:
        return candidates
    return large if queries >= small_below else small


def draw_pools(queries: list[dict], candidates: dict[str, dict], seed: int, large: int = 1000, small: int = 100,
               small_below: int = 1000) -> tuple[list[dict], list[dict]]:
    """(queries with `pool` and `gold_position`, one row per group: queries, candidates, rule, pool size)."""
    groups: dict[tuple, list[dict]] = {}
    for q in sorted(queries, key=lambda q: q["id"]):
        groups.setdefault((q["task"], q["dataset"], q["language"]), []).append(q)
    group_ids: dict[tuple, list[str]] = {}
    for c in candidates.values():
        group_ids.setdefault((c["task"], c["dataset"], c["language"]), []).append(c["id"])
    pooled, facts = [], []
    for key, members in sorted(groups.items()):
        task, dataset, language = key
        ids = sorted(group_ids.get(key, []))
        where = {c: i for i, c in enumerate(ids)}
        rule = pool_rule(task, len(members), len(ids), large, small, small_below)
        size = min(rule, len(ids))
        rng = group_rng(seed, task, dataset, language)
        for q in members:
            # The distractors are drawn from the group's ids without the gold; index i of that list
            # is ids[i] before the gold's place and ids[i + 1] after it (no per-query copy: a
            # 3,600-query group against 3,600 candidates would copy 13 M ids).
            gold_at = where.get(q["gold"], len(ids))
            n_others = len(ids) - (gold_at < len(ids))
            picks = rng.choice(n_others, size - 1, replace=False) if size > 1 else np.array([], dtype=int)
            position = int(rng.integers(size))
            pool = [ids[i if i < gold_at else i + 1] for i in sorted(picks)]
            pool.insert(position, q["gold"])
            pooled.append({**q, "pool": pool, "gold_position": position})
        facts.append({"task": task, "dataset": dataset, "language": language, "status": "built",
                      "queries": len(members), "candidates": len(ids), "pool_rule": rule, "pool_size": size,
                      "note": "" if size == rule else f"pool = min({rule}, {len(ids)} candidates)"})
    return pooled, facts


def missing_tasks(facts: list[dict], languages: list[str], configured: dict[str, list[str]]) -> list[dict]:
    """A row per (task, dataset, language) of the paper's Table 1 that was not built, with the reason:
    never silently left out."""
    built = {(f["task"], f["dataset"], f["language"]) for f in facts}
    rows = []
    for (task, dataset), role in TASKS.items():
        for language in languages:
            if language not in PAPER_LANGUAGES.get(dataset, languages) or (task, dataset, language) in built:
                continue
            reason = (f"no {role} source configured" if not configured.get(role)
                      else f"{', '.join(configured[role])}: no {language} rows")
            rows.append({"task": task, "dataset": dataset, "language": language, "status": "missing",
                         "queries": 0, "candidates": 0, "pool_rule": 0, "pool_size": 0, "note": reason})
    return rows
