"""MMMEB P@1 over a table of (query embedding, gold target embedding) rows grouped by task and language,
optionally against a second system's table with the same ids (McNemar per task x language)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.schemas.contract import ContractError
from xmdata.schemas.evaluation import labels, require_columns, require_matching_keys, require_unique, vectors

from xmdata.tasks.evaluation.retrieval import distractor_count, group_rng, mcnemar, retrieval_hits

ALL_CANDIDATE_TASKS = ("C", "classification")


def _load(table: pa.Table, query: str, target: str, keyed: list[str], source: str, id_column: str):
    require_columns(table, {id_column: "label", query: "vector", target: "vector", **{c: "label" for c in keyed}},
                    source)
    require_unique(table, [id_column], source, id_column)
    table = table.sort_by(id_column)
    q, t = vectors(table, query, source, id_column), vectors(table, target, source, id_column)
    if q.shape[1] != t.shape[1]:
        raise ContractError(f"{source}: {query} has {q.shape[1]} dimensions but {target} has {t.shape[1]}")
    return table, q, t


def mmmeb_precision(table: pa.Table, query: str, target: str, task: str = "task", language: str = "language",
                    target_key: str | None = None, all_candidate_tasks=ALL_CANDIDATE_TASKS, seed: int = 0,
                    against: pa.Table | None = None, source: str = "input", against_source: str = "against",
                    id_column: str = "id") -> dict:
    """P@1 per task x language (rows in id order; pools seeded by seed, task and language), the mean over
    languages per task, and the mean over tasks. Rows sharing `target_key` (e.g. an image id, a class
    label) share one candidate; tasks in `all_candidate_tasks` rank against every candidate."""
    keyed = [task, language] + ([target_key] if target_key else [])
    table, q, t = _load(table, query, target, keyed, source, id_column)
    ids = labels(table, id_column, source, id_column)
    if against is not None:
        against = against.select([c for c in against.column_names if c in (id_column, query, target)])
        against, q_b, t_b = _load(against, query, target, [], against_source, id_column)
        require_matching_keys(set(ids), set(against.column(id_column).to_pylist()), id_column, source, against_source)
    group = np.asarray([f"{a}\x00{b}" for a, b in zip(labels(table, task, source, id_column),
                                                       labels(table, language, source, id_column))])
    keys = np.asarray([str(v) for v in labels(table, target_key, source, id_column)]) if target_key else np.asarray(ids, dtype=str)
    per_group, all_hits = [], ([], [])
    for name in sorted(set(group.tolist())):
        rows = np.flatnonzero(group == name)
        task_name, lang = name.split("\x00")
        distractors = None if task_name in all_candidate_tasks else distractor_count(len(rows))
        hits, pool = retrieval_hits(q[rows], t[rows], keys[rows], distractors, group_rng(seed, task_name, lang))
        entry = {"task": task_name, "language": lang, "n": int(len(rows)), "pool_size": pool,
                 "p_at_1": float(hits.mean())}
        if distractors is not None and pool < distractors + 1:
            entry["note"] = f"only {pool - 1} distinct other candidates (rule asks {distractors})"
        if against is not None:
            hits_b, _ = retrieval_hits(q_b[rows], t_b[rows], keys[rows], distractors, group_rng(seed, task_name, lang))
            entry.update(p_at_1_against=float(hits_b.mean()), mcnemar=mcnemar(hits, hits_b))
            all_hits[0].append(hits)
            all_hits[1].append(hits_b)
        per_group.append(entry)
    overall = None
    if against is not None:  # every query of every group, pooled
        overall = mcnemar(np.concatenate(all_hits[0]), np.concatenate(all_hits[1])) if per_group else None
    per_task = {}
    for name in sorted({g["task"] for g in per_group}):
        entries = [g for g in per_group if g["task"] == name]
        per_task[name] = {"languages": len(entries), "p_at_1": float(np.mean([g["p_at_1"] for g in entries]))}
        if against is not None:
            per_task[name]["p_at_1_against"] = float(np.mean([g["p_at_1_against"] for g in entries]))
    average = {k: float(np.mean([v[k] for v in per_task.values()])) if per_task else None
               for k in (["p_at_1", "p_at_1_against"] if against is not None else ["p_at_1"])}
    return {"seed": seed, "query_column": query, "target_column": target, "per_group": per_group,
            "per_task": per_task, "average": average, "mcnemar_all_queries": overall, "significant_at_0.05": sum(
                1 for g in per_group if g.get("mcnemar", {}).get("p_value", 1.0) < 0.05) if against is not None else None}
