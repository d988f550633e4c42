"""MMMEB pools as data: their sizes follow the paper's rule (bounded by the candidates there are), the
gold sits where the pool says, and every system is scored on the very same pools. The rule is scaled
down tenfold here (1 + 99 from 100 queries, else 1 + 9) to keep the test fast; the paper's numbers are
the defaults, checked at the end."""
import numpy as np
import pyarrow as pa
import pytest

from xmdata.tasks.evaluation.mmmeb_pools import pool_precision
from xmdata.tasks.mmmeb.pools import QUERIES_SCHEMA, draw_pools, missing_tasks


def group(task, dataset, language, n, candidates=None):
    prefix = f"{task}/{dataset}/{language}"
    queries = [{"id": f"{prefix}/{i:05d}", "task": task, "dataset": dataset, "language": language, "text": f"q{i}",
                "image": None, "box": None, "gold": f"{prefix}/c{i % (candidates or n):05d}"} for i in range(n)]
    pool = {f"{task}/{dataset}/{language}/c{i:05d}": {"id": f"{task}/{dataset}/{language}/c{i:05d}", "task": task,
                                                         "dataset": dataset, "language": language}
            for i in range(candidates or n)}
    return queries, pool


RULE = {"large": 100, "small": 10, "small_below": 100}


@pytest.fixture(scope="module")
def pools():
    big, big_c = group("T2I", "xm3600", "en", 120)
    small, small_c = group("I2T", "xtd10", "fr", 15)
    tiny, tiny_c = group("VQA", "maxm", "fr", 6)
    classes, classes_c = group("C", "imagenet", "de", 30, candidates=4)
    return draw_pools(big + small + tiny + classes, {**big_c, **small_c, **tiny_c, **classes_c}, seed=7, **RULE)


def test_pool_sizes_follow_the_paper_and_never_exceed_the_candidates(pools):
    queries, facts = pools
    sizes = {(f["task"], f["language"]): (f["pool_rule"], f["pool_size"]) for f in facts}
    assert sizes == {("T2I", "en"): (100, 100), ("I2T", "fr"): (10, 10), ("VQA", "fr"): (10, 6),
                     ("C", "de"): (4, 4)}
    assert [f["note"] for f in facts if f["task"] == "VQA"] == ["pool = min(10, 6 candidates)"]
    for q in queries:
        assert len(q["pool"]) == sizes[(q["task"], q["language"])][1] == len(set(q["pool"]))


def test_gold_is_in_its_pool_at_the_recorded_position_and_positions_vary(pools):
    queries, _ = pools
    assert all(q["pool"][q["gold_position"]] == q["gold"] and q["pool"].count(q["gold"]) == 1 for q in queries)
    positions = [q["gold_position"] for q in queries if q["task"] == "T2I"]
    assert len(set(positions)) > 50  # spread over the pool, not always first
    assert all(c.startswith("T2I/xm3600/en/") for q in queries if q["task"] == "T2I" for c in q["pool"])


def test_pools_are_seeded_and_identical_for_every_system(pools):
    queries, facts = pools
    again, _ = draw_pools([{k: v for k, v in q.items() if k not in ("pool", "gold_position")} for q in queries],
                          {c: {"id": c, "task": c.split("/")[0], "dataset": c.split("/")[1], "language": c.split("/")[2]}
                           for q in queries for c in q["pool"]}, seed=7, **RULE)
    assert [q["pool"] for q in again] == [q["pool"] for q in queries]
    table = pa.Table.from_pylist([{k: q.get(k) for k in QUERIES_SCHEMA.names} for q in queries], QUERIES_SCHEMA)
    candidates = sorted({c for q in queries for c in q["pool"]})
    rng = np.random.default_rng(0)
    vectors = {c: (v := rng.normal(size=16)) / np.linalg.norm(v) for c in candidates}

    def system(noise):  # queries near their gold; more noise, fewer hits
        q = {r["id"]: vectors[r["gold"]] + rng.normal(scale=noise, size=16) for r in queries}
        return (pa.table({"id": list(q), "embedding": [v.tolist() for v in q.values()]}),
                pa.table({"id": candidates, "embedding": [vectors[c].tolist() for c in candidates]}))

    result = pool_precision(table, {"good": system(0.01), "noisy": system(3.0)}, seed=7)
    for g in result["per_group"]:
        assert g["pool_size"] == next(f["pool_size"] for f in facts if f["task"] == g["task"])
        assert g["good"] == 1.0 and g["noisy"] < 1.0
        assert g["mcnemar noisy"]["only_first"] > 0
    assert result["summary"]["good"]["avg3"] == 1.0 and result["summary"]["noisy"]["not_evaluated"] == []


def test_the_paper_rule_is_the_default():
    from xmdata.tasks.mmmeb.pools import pool_rule

    assert [pool_rule("T2I", n, 5000, 1000, 100, 1000) for n in (999, 1000)] == [100, 1000]
    assert pool_rule("C", 10, 1000, 1000, 100, 1000) == 1000  # every class
    from xmdata.flows.mmmeb_config import MmmebConfig

    config = MmmebConfig()
    assert (config.pool_size, config.small_pool_size, config.small_below) == (1000, 100, 1000)


def test_groups_the_sources_could_not_give_are_listed_missing():
    rows = missing_tasks([{"task": "I2T", "dataset": "xm3600", "language": "en"}], ["en", "de"],
                         {"xm3600": ["xm3600"], "xtd10": [], "maxm": ["maxm"]})
    by_group = {(r["task"], r["dataset"], r["language"]): r["note"] for r in rows}
    assert by_group[("I2T", "xm3600", "de")] == "xm3600: no de rows"
    assert by_group[("T2I", "xtd10", "en")] == "no xtd10 source configured"
    assert ("VQA", "maxm", "de") not in by_group  # MaXM has en and fr only in the paper: not missing
    assert all(r["status"] == "missing" for r in rows)
