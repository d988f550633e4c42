import numpy as np
import pyarrow as pa
import pytest
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from xmdata.schemas import ContractError
from xmdata.tasks.evaluation.mmmeb import mmmeb_precision
from xmdata.tasks.evaluation.retrieval import mcnemar, retrieval_hits


def unit(rng, n, d=64):
    x = rng.normal(size=(n, d))
    return x / np.linalg.norm(x, axis=1, keepdims=True)


def test_pool_sizes_follow_the_rule_and_a_perfect_system_scores_one():
    rng = np.random.default_rng(0)
    for n, pool in ((150, 100), (999, 100), (1000, 1000), (60, 60)):  # 60 items: only 59 others exist
        targets = unit(rng, n)
        hits, size = retrieval_hits(targets, targets, np.arange(n), 999 if n >= 1000 else 99, rng)
        assert size == pool and hits.all()


def test_a_gold_beaten_by_one_candidate_survives_as_often_as_that_candidate_is_left_out():
    rng = np.random.default_rng(1)
    n, d = 2000, 256
    targets = unit(rng, n, d)
    twin = np.arange(n) ^ 1  # items 2j and 2j+1 are each other's twin
    queries = targets + 2 * targets[twin]  # closer to the twin than to the gold: gold ranks 2nd of all
    hits, size = retrieval_hits(queries, targets, np.arange(n), 999, np.random.default_rng(2))
    assert size == 1000
    # the twin is among 999 of the 1,999 others with probability 999/1999
    assert abs(hits.mean() - (1 - 999 / 1999)) < 0.04  # sd 0.011
    all_hits, size = retrieval_hits(queries, targets, np.arange(n), None, np.random.default_rng(2))
    assert size == n and not all_hits.any()


def test_random_system_scores_one_over_the_pool():
    rng = np.random.default_rng(3)
    hits, size = retrieval_hits(unit(rng, 3000), unit(rng, 3000), np.arange(3000), 99, rng)
    assert size == 100 and abs(hits.mean() - 0.01) < 0.006  # sd 0.0018


def test_rows_sharing_a_key_share_one_candidate_and_ties_win_a_fair_draw():
    rng = np.random.default_rng(4)
    classes = unit(rng, 5)
    labels = np.repeat(np.arange(5), 40)
    hits, size = retrieval_hits(classes[labels], classes[labels], labels, None, rng)
    assert size == 5 and hits.all()
    same = np.ones((400, 8))  # every candidate identical: the gold wins its draw 1 time in 400
    hits, size = retrieval_hits(same, same, np.arange(400), 99, np.random.default_rng(5))
    assert size == 100 and abs(hits.mean() - 0.01) < 0.02


@pytest.mark.parametrize("only_a, only_b", [(3, 10), (0, 6), (20, 40), (30, 30), (12, 13)])
def test_mcnemar_matches_statsmodels_with_the_switch_at_25_discordant_pairs(only_a, only_b):
    both = 50
    a = np.array([True] * (both + only_a) + [False] * only_b + [False] * 7)
    b = np.array([True] * both + [False] * only_a + [True] * only_b + [False] * 7)
    result = mcnemar(a, b)
    exact = only_a + only_b < 25
    reference = sm_mcnemar([[both, only_a], [only_b, 7]], exact=exact, correction=True)
    assert result["method"] == ("exact-binomial" if exact else "chi2-continuity")
    assert result["statistic"] == pytest.approx(reference.statistic)
    assert result["p_value"] == pytest.approx(reference.pvalue)


def test_mcnemar_without_discordant_pairs_or_with_unpaired_outcomes():
    assert mcnemar([True, False], [True, False])["p_value"] == 1.0
    with pytest.raises(ContractError, match="same items"):
        mcnemar([True, False], [True])


def mmmeb_table(rng, ids, noise):
    n = len(ids)
    target = unit(rng, n, 32)
    query = target + noise * rng.normal(size=target.shape)
    return pa.table({"id": ids, "task": ["I2T"] * (n // 2) + ["C"] * (n - n // 2), "language": ["de"] * n,
                     "class": [f"c{i % 7}" for i in range(n)],
                     "query_embedding": pa.array(list(query.astype(np.float32)), pa.list_(pa.float32(), 32)),
                     "target_embedding": pa.array(list(target.astype(np.float32)), pa.list_(pa.float32(), 32))})


def test_mmmeb_groups_pools_and_mcnemar_against_a_second_system():
    rng = np.random.default_rng(6)
    ids = [f"q{i:03d}" for i in range(300)]
    strong, weak = mmmeb_table(rng, ids, 0.05), mmmeb_table(np.random.default_rng(6), ids, 0.05)
    weak = weak.set_column(4, "query_embedding", pa.array(list(unit(rng, 300, 32).astype(np.float32)),
                                                          pa.list_(pa.float32(), 32)))
    result = mmmeb_precision(strong, "query_embedding", "target_embedding", against=weak.take(np.arange(299, -1, -1)))
    groups = {g["task"]: g for g in result["per_group"]}
    assert groups["I2T"]["pool_size"] == 100 and groups["C"]["pool_size"] == 150  # C: every candidate
    assert groups["I2T"]["p_at_1"] > 0.9 and groups["I2T"]["p_at_1_against"] < 0.2
    assert groups["I2T"]["mcnemar"]["method"] == "chi2-continuity" and groups["I2T"]["mcnemar"]["p_value"] < 1e-6
    pooled = result["mcnemar_all_queries"]
    assert pooled["only_first"] + pooled["only_second"] == sum(g["mcnemar"]["discordant"] for g in groups.values())
    assert result["average"]["p_at_1"] == pytest.approx(np.mean([groups["I2T"]["p_at_1"], groups["C"]["p_at_1"]]))
    self_check = mmmeb_precision(strong, "query_embedding", "target_embedding", against=strong)
    assert all(g["mcnemar"]["discordant"] == 0 for g in self_check["per_group"])  # same pools, same draws
    keyed = mmmeb_precision(strong, "query_embedding", "target_embedding", target_key="class")
    assert {g["pool_size"] for g in keyed["per_group"]} == {7}
    with pytest.raises(ContractError, match="q000"):
        mmmeb_precision(strong, "query_embedding", "target_embedding", against=weak.slice(1))
