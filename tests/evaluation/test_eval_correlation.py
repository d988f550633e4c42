import itertools
import math

import numpy as np
import pyarrow as pa
import pytest
from scipy import stats

from xmdata.schemas import ContractError
from xmdata.tasks.evaluation.correlation import correlate, rating_correlations
from xmdata.tasks.evaluation.crosslingual import cross_language_pearson

# CLIPScore-like scores against 1-4 ratings, with ties in both: τ-b and τ-c differ here.
SCORES = [0.61, 0.70, 0.70, 0.55, 0.82, 0.82, 0.64, 0.91, 0.58, 0.70]
RATINGS = [2, 3, 2, 1, 4, 3, 2, 4, 1, 3]


def kendall_by_hand(x, y, m):
    """Concordant/discordant counts over all pairs, then τ-b and Stuart's τ-c (Appendix B)."""
    nc = nd = tx = ty = 0
    for i, j in itertools.combinations(range(len(x)), 2):
        sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
        nc += sx * sy > 0
        nd += sx * sy < 0
        tx += sx == 0
        ty += sy == 0
    n0 = len(x) * (len(x) - 1) / 2
    tau_b = (nc - nd) / math.sqrt((n0 - tx) * (n0 - ty))
    tau_c = 2 * (nc - nd) / (len(x) ** 2 * (m - 1) / m)
    return tau_b, tau_c


def test_kendall_variants_match_hand_computation_and_differ_with_ties():
    result = correlate(np.array(SCORES), np.array(RATINGS, dtype=float))
    tau_b, tau_c = kendall_by_hand(SCORES, RATINGS, m=4)  # all four rating levels occur
    assert result["kendall_tau_b"] == pytest.approx(tau_b)
    assert result["kendall_tau_c"] == pytest.approx(tau_c)
    assert abs(result["kendall_tau_b"] - result["kendall_tau_c"]) > 0.01
    assert result["spearman"] == pytest.approx(stats.spearmanr(SCORES, RATINGS).statistic)
    assert result["pearson"] == pytest.approx(np.corrcoef(SCORES, RATINGS)[0, 1])
    assert result["reason"] is None and 0 < result["pearson_p"] < 1


@pytest.mark.parametrize("x, y, reason", [([0.5], [3.0], "fewer than two items"),
                                          ([0.5, 0.5, 0.5], [1.0, 2.0, 3.0], "the score is constant"),
                                          ([0.1, 0.5, 0.7], [2.0, 2.0, 2.0], "the rating is constant")])
def test_degenerate_inputs_give_null_with_reason(x, y, reason):
    result = correlate(np.array(x), np.array(y))
    assert result["reason"] == reason
    assert all(result[s] is None for s in ("kendall_tau_b", "kendall_tau_c", "spearman", "pearson"))


def table(**columns):
    n = len(next(iter(columns.values())))
    return pa.table({"id": [f"r{i}" for i in range(n)], **columns})


def test_per_language_and_qe_quartiles_match_scipy_on_the_selected_rows():
    rng = np.random.default_rng(0)
    n = 40
    scores, ratings = rng.normal(size=2 * n), rng.integers(1, 5, 2 * n).astype(float)
    qe = np.concatenate([np.full(n, np.nan), rng.uniform(0.5, 0.9, n)])  # en is the source: no QE
    t = table(clip_score=scores, rating=ratings, language=["en"] * n + ["de"] * n,
              qe_score=pa.array(qe, from_pandas=True))
    result = rating_correlations(t, "clip_score", "rating", "language", (1, 4), "qe_score")
    de = slice(n, 2 * n)
    assert result["per_language"]["de"]["pearson"] == pytest.approx(stats.pearsonr(scores[de], ratings[de]).statistic)
    low = qe[de] <= np.quantile(qe[de], 0.25)
    assert result["by_qe_quartile"]["de"]["bottom"]["n"] == low.sum() == 10
    assert result["by_qe_quartile"]["de"]["bottom"]["kendall_tau_c"] == pytest.approx(
        stats.kendalltau(scores[de][low], ratings[de][low], variant="c").statistic)
    assert "source language" in result["by_qe_quartile"]["en"]["reason"]


def test_bad_inputs_are_refused_with_the_offending_rows():
    t = table(clip_score=[0.1, float("nan"), 0.3], rating=[1.0, 2.0, 3.0])
    with pytest.raises(ContractError, match=r"NaN.*id='r1'"):
        rating_correlations(t, "clip_score", "rating")
    t = table(clip_score=[0.1, 0.2, 0.3], rating=[1.0, 5.0, 3.0])
    with pytest.raises(ContractError, match=r"outside the declared scale \[1, 4\].*id='r1'"):
        rating_correlations(t, "clip_score", "rating", scale=(1, 4))
    with pytest.raises(ContractError, match="'score'.*missing"):
        rating_correlations(t, "score", "rating")
    t = table(clip_score=[0.1, 0.2], rating=[1.0, 2.0], language=["de", "de"], qe_score=[0.7, None])
    with pytest.raises(ContractError, match="language 'de': 1 of 2 rows have no QE"):
        rating_correlations(t, "clip_score", "rating", "language", qe="qe_score")


def test_cross_language_matrix_pairs_items_and_splits_by_pair_qe():
    rng = np.random.default_rng(1)
    items = [f"i{k}" for k in range(20)]
    en = rng.normal(size=20)
    de, fr = en + rng.normal(0, 0.3, 20), en + rng.normal(0, 0.6, 20)
    qe_de, qe_fr = rng.uniform(size=20), rng.uniform(size=20)
    keep_fr = np.arange(20) != 3  # fr lacks item i3
    t = table(item=items * 2 + [i for i, k in zip(items, keep_fr) if k],
              language=["en"] * 20 + ["de"] * 20 + ["fr"] * 19,
              clip_score=np.concatenate([en, de, fr[keep_fr]]),
              qe_score=pa.array(np.concatenate([np.full(20, np.nan), qe_de, qe_fr[keep_fr]]), from_pandas=True))
    m = cross_language_pearson(t, "clip_score", "language", "item", "qe_score")
    assert m["languages"] == ["de", "en", "fr"]
    assert m["all"]["pearson"][1][2] == pytest.approx(np.corrcoef(en[keep_fr], fr[keep_fr])[0, 1])
    assert m["all"]["n"][1][2] == 19 and m["all"]["pearson"][0][0] == pytest.approx(1.0)
    bottom = qe_de <= np.quantile(qe_de, 0.25)  # en-de: de's own quartile
    assert m["bottom_quartile"]["pearson"][0][1] == pytest.approx(np.corrcoef(en[bottom], de[bottom])[0, 1])
    pair = np.minimum(qe_de, qe_fr)[keep_fr]  # de-fr: the worse translation of the two
    top = pair >= np.quantile(pair, 0.75)
    assert m["top_quartile"]["pearson"][2][0] == pytest.approx(np.corrcoef(de[keep_fr][top], fr[keep_fr][top])[0, 1])
    assert {"languages": ["en", "en"], "subset": "bottom_quartile", "reason": "no common items with QE scores"} \
        in m["undefined"]


def test_cross_language_matrix_refuses_repeated_item_language():
    t = table(item=["a", "a"], language=["en", "en"], clip_score=[0.1, 0.2])
    with pytest.raises(ContractError, match="repeated key"):
        cross_language_pearson(t, "clip_score", "language", "item")
