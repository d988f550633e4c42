"""MMMEB end to end (xVLM2Vec): task instances from the imported sources, pools drawn once and
published, every system's embeddings of queries and candidates, and P@1 on those pools.

Steps run in the flow's process (the benchmark is a few thousand rows; the embedding models load once
per system) and resume: a system whose embeddings were made from the same pools with the same model
is not embedded again."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.runtime.atomic import sha256_file, write_json_atomic, write_parquet_atomic, write_text_atomic
from xmdata.runtime.process import StageReport
from xmdata.tasks.evaluation.mmmeb_pools import pool_precision, pools_markdown
from xmdata.tasks.mmmeb.embed import embed_benchmark, load_prompts
from xmdata.tasks.mmmeb.pools import CANDIDATES_SCHEMA, QUERIES_SCHEMA, draw_pools, missing_tasks
from xmdata.tasks.mmmeb.prompts import with_prompts
from xmdata.tasks.mmmeb.tasks import build_instances, read_source

from .mmmeb_config import MmmebConfig
from .finish import step_report

TASKS_SCHEMA = pa.schema([("task", pa.string()), ("dataset", pa.string()), ("language", pa.string()),
                          ("status", pa.string()), ("queries", pa.int64()), ("candidates", pa.int64()),
                          ("pool_rule", pa.int64()), ("pool_size", pa.int64()), ("note", pa.string())])


def assemble(config: MmmebConfig, imports: dict[str, str], work: str, seed: int) -> tuple[StageReport, list[dict]]:
    roles = config.sources.model_dump()
    sources = {role: [read_source(n, imports[n]) for n in names] for role, names in roles.items()}
    instances = build_instances(sources, config.languages, config.imagenet_first)
    pools, facts = draw_pools(instances.queries, instances.candidates, seed, config.pool_size,
                              config.small_pool_size, config.small_below)
    facts += missing_tasks(facts, config.languages, roles)
    queries, candidates = with_prompts(pools, list(instances.candidates.values()), load_prompts()["templates"])
    write_parquet_atomic(pa.Table.from_pylist(queries, QUERIES_SCHEMA.append(pa.field("prompt", pa.string()))),
                         os.path.join(work, "mmmeb_queries.parquet"))
    write_parquet_atomic(pa.Table.from_pylist(sorted(candidates, key=lambda c: c["id"]),
                                              CANDIDATES_SCHEMA.append(pa.field("prompt", pa.string()))),
                         os.path.join(work, "mmmeb_candidates.parquet"))
    write_parquet_atomic(pa.Table.from_pylist(facts, TASKS_SCHEMA), os.path.join(work, "mmmeb_tasks.parquet"))
    rejects = instances.rejects[0]
    return step_report("mmmeb_tasks", len(queries) + rejects.num_rows, len(queries), rejects, work), facts


def embed_system(system, work: str, roots: dict[str, str]) -> StageReport:
    folder = os.path.join(work, "mmmeb_embeddings", system.name)
    inputs = {n: sha256_file(os.path.join(work, f"mmmeb_{n}.parquet")) for n in ("queries", "candidates")}
    record = json.loads(json.dumps({"inputs": inputs, "model": system.spec().to_dict()}))  # as read back
    record_path, stage = os.path.join(folder, "_done.json"), f"mmmeb_embed_{system.name}"
    done = json.load(open(record_path)) if os.path.exists(record_path) else None
    if done and done["record"] == record:  # resumed: the tables are not even read
        return StageReport(stage, [done["counts"]], 0, 1)
    from xmdata.models.registry import get_model  # loads torch: only when a system is embedded

    queries, candidates = (pq.read_table(os.path.join(work, f"mmmeb_{n}.parquet")) for n in ("queries", "candidates"))
    rows_in = queries.num_rows + candidates.num_rows

    tables, rejects = embed_benchmark(get_model("embedder", system.spec()), queries, candidates, roots, system.name)
    for name, table in tables.items():
        write_parquet_atomic(table, os.path.join(folder, f"{name}.parquet"))
    report = step_report(stage, rows_in, rows_in - rejects.num_rows, rejects, work)
    write_json_atomic({"record": record, "counts": report.records[0]}, record_path)
    return report


def evaluate(config: MmmebConfig, work: str, seed: int) -> dict:
    systems = {s.name: tuple(pq.read_table(os.path.join(work, "mmmeb_embeddings", s.name, f"{n}.parquet"))
                             for n in ("queries", "candidates")) for s in config.systems}
    result = pool_precision(pq.read_table(os.path.join(work, "mmmeb_queries.parquet")), systems, seed)
    rows = [{"system": name, "task": g["task"], "dataset": g["dataset"], "language": g["language"], "n": g["n"],
             "pool_size": g["pool_size"], "p_at_1": g[name],
             "mcnemar_p_value": (g.get(f"mcnemar {name}") or {}).get("p_value")}
            for g in result["per_group"] for name in result["systems"]]
    schema = pa.schema([("system", pa.string()), ("task", pa.string()), ("dataset", pa.string()),
                        ("language", pa.string()), ("n", pa.int64()), ("pool_size", pa.int64()),
                        ("p_at_1", pa.float64()), ("mcnemar_p_value", pa.float64())])
    write_parquet_atomic(pa.Table.from_pylist(rows, schema), os.path.join(work, "mmmeb_results.parquet"))
    write_json_atomic(result, os.path.join(work, "mmmeb_report.json"))
    write_text_atomic(pools_markdown(result), os.path.join(work, "mmmeb_report.md"))
    return result


def build_mmmeb(config: MmmebConfig, imports: dict[str, str], roots: dict[str, str], work: str, seed: int):
    """(stage reports, distributions, markdown) for the release build."""
    tasks_report, facts = assemble(config, imports, work, seed)
    reports = [tasks_report] + [embed_system(s, work, roots) for s in config.systems]
    result = evaluate(config, work, seed) if config.systems else None
    built = [f for f in facts if f["status"] == "built"]
    stats = {"mmmeb_groups": {"built": len(built), "missing": len(facts) - len(built)}}
    return reports, stats, mmmeb_markdown(facts, result)


def mmmeb_markdown(facts: list[dict], result: dict | None) -> str:
    lines = ["| task | dataset | language | status | queries | pool | note |",
             "| --- | --- | --- | --- | ---: | ---: | --- |"]
    lines += [f"| {f['task']} | {f['dataset']} | {f['language']} | {f['status']} | {f['queries']} | {f['pool_size']} | "
              f"{f['note']} |" for f in facts]
    return "\n".join(lines) + "\n" + ("\n" + pools_markdown(result) if result else "")
