"""MMMEB P@1 on published pools: each query against exactly the candidates its pool lists (the gold
among them), so every system is scored on the same pools. Ties with the gold are broken by a draw
seeded by the seed and the group, won with probability 1 / (1 + ties), as `evaluate mmmeb` does.
Averages as the paper's Table 2: per task over its datasets x languages, AVG-3 (I2T, T2I, C), AVG."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.schemas.contract import ContractError
from xmdata.schemas.evaluation import require_columns, require_ids, vectors

from xmdata.tasks.evaluation.inputs import heading, read_table
from xmdata.tasks.evaluation.ranking import TIE, unit_rows
from xmdata.tasks.evaluation.report import Report, md_table
from xmdata.tasks.evaluation.retrieval import group_rng, mcnemar

AVG3 = ("I2T", "T2I", "C")


def _vectors(table: pa.Table, source: str) -> tuple[dict[str, int], np.ndarray]:
    """(row of each id, the embeddings as unit rows: cosine, as `evaluate mmmeb` scores), checked as
    every evaluation input is (ids once; no null, ragged, non-finite or all-zero embedding)."""
    require_columns(table, {"id": "label", "embedding": "vector"}, source)
    require_ids(table, "id", source)
    return {i: n for n, i in enumerate(table.column("id").to_pylist())}, unit_rows(vectors(table, "embedding", source))


def group_hits(rows: list[dict], queries, candidates, rng: np.random.Generator) -> np.ndarray | None:
    """Hits of a group's queries (in id order), or None when the system embedded not all of them."""
    (q_row, q_matrix), (c_row, c_matrix) = queries, candidates
    if any(r["id"] not in q_row or any(c not in c_row for c in r["pool"]) for r in rows):
        return None
    # Each query against the group's candidates once (queries x candidates), then its pool picked out:
    # gathering a pool's vectors per query would hold queries x 1,000 x width floats at once.
    union = sorted({c for r in rows for c in r["pool"]})
    column = {c: j for j, c in enumerate(union)}
    every = q_matrix[[q_row[r["id"]] for r in rows]] @ c_matrix[[c_row[c] for c in union]].T
    sims = np.take_along_axis(every, np.array([[column[c] for c in r["pool"]] for r in rows]), axis=1)
    own = sims[np.arange(len(rows)), [r["gold_position"] for r in rows]][:, None]
    greater, equal = (sims > own + TIE).sum(axis=1), (np.abs(sims - own) <= TIE).sum(axis=1) - 1
    return (greater == 0) & (rng.random(len(rows)) * (equal + 1) < 1)


def pool_precision(pools: pa.Table, systems: dict[str, tuple[pa.Table, pa.Table]], seed: int = 0) -> dict:
    """systems: {name: (query embeddings, candidate embeddings)}; the first is compared with the others."""
    embedded = {name: (_vectors(q, f"{name} query embeddings"), _vectors(c, f"{name} candidate embeddings"))
                for name, (q, c) in systems.items()}
    for name, ((_, q), (_, c)) in embedded.items():
        if q.shape[1] != c.shape[1]:
            raise ContractError(f"evaluate mmmeb: {name}'s query and candidate embeddings differ in width "
                                f"({q.shape[1]} and {c.shape[1]})")
    groups: dict[tuple, list[dict]] = {}
    for row in sorted(pools.to_pylist(), key=lambda r: r["id"]):
        groups.setdefault((row["task"], row["dataset"], row["language"]), []).append(row)
    per_group, first = [], next(iter(systems), None)
    for (task, dataset, language), rows in sorted(groups.items()):
        entry = {"task": task, "dataset": dataset, "language": language, "n": len(rows),
                 "pool_size": len(rows[0]["pool"])}
        hits = {name: group_hits(rows, q, c, group_rng(seed, "ties", task, dataset, language))
                for name, (q, c) in embedded.items()}
        for name, h in hits.items():
            entry[name] = None if h is None else float(h.mean())
        for name in list(hits)[1:]:
            if hits[first] is not None and hits[name] is not None:
                entry[f"mcnemar {name}"] = mcnemar(hits[first], hits[name])
        per_group.append(entry)
    summary = {}
    for name in systems:
        per_task = {}
        for task in sorted({g["task"] for g in per_group}):
            scored = [g[name] for g in per_group if g["task"] == task and g[name] is not None]
            per_task[task] = float(np.mean(scored)) if scored else None
        present = {t: v for t, v in per_task.items() if v is not None}
        summary[name] = {"per_task": per_task,
                         "avg3": float(np.mean([present[t] for t in AVG3])) if all(t in present for t in AVG3) else None,
                         "avg": float(np.mean(list(present.values()))) if present else None,
                         "not_evaluated": sorted(t for t, v in per_task.items() if v is None)}
    return {"seed": seed, "systems": list(systems), "per_group": per_group, "summary": summary}


POOL_COLUMNS = ("id", "task", "dataset", "language", "pool", "gold_position")


def checked(table: pa.Table, path: str, columns: tuple[str, ...]) -> pa.Table:
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ContractError(f"{path}: no column {', '.join(missing)} (has {', '.join(table.column_names)})")
    return table


def pools_markdown(result: dict) -> str:
    names = result["systems"]
    rows = [{**{k: g[k] for k in ("task", "dataset", "language", "n", "pool_size")}, **{n: g[n] for n in names},
             **{f"McNemar p ({n})": (g.get(f"mcnemar {n}") or {}).get("p_value") for n in names[1:]}}
            for g in result["per_group"]]
    md = md_table(rows, ["task", "dataset", "language", "n", "pool_size", *names, *[f"McNemar p ({n})" for n in names[1:]]],
                  percent=tuple(names))
    summary = [{"system": n, **{t: s["per_task"].get(t) for t in ("I2T", "T2I", "VQA", "VG", "C")}, "AVG-3": s["avg3"],
                "AVG": s["avg"]} for n, s in result["summary"].items()]
    return md + "\n### P@1 per task (the paper's Table 2)\n\n" + md_table(
        summary, ["system", "I2T", "T2I", "VQA", "VG", "C", "AVG-3", "AVG"],
        percent=("I2T", "T2I", "VQA", "VG", "C", "AVG-3", "AVG"))


def run_mmmeb_pools(o: dict) -> Report:
    """`xmdata evaluate mmmeb QUERY_EMBEDDINGS --pools mmmeb_queries.parquet --candidates CANDIDATE_EMBEDDINGS
    [--against Q2 --against-candidates C2]`."""
    if not o.get("candidates") or bool(o.get("against")) != bool(o.get("against_candidates")):
        raise ContractError("evaluate mmmeb --pools needs --candidates, and --against with --against-candidates")
    pairs = {"input": ("input", "candidates"), "against": ("against", "against_candidates")}
    systems = {name: tuple(read_table(o[k], f"--{k.replace('_', '-')}") for k in keys)
               for name, keys in pairs.items() if o.get(keys[0])}  # checked in pool_precision
    result = pool_precision(checked(read_table(o["pools"], "--pools"), o["pools"], POOL_COLUMNS), systems, o["seed"])
    md = heading("MMMEB P@1 on published pools", [o["input"], o["pools"]], {"seed": o["seed"]}) + pools_markdown(result)
    return Report("mmmeb", {"metric": "mmmeb", **result}, md, tables={"mmmeb": result["per_group"]})
