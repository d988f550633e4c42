import pyarrow as pa
import pytest

from xmdata.schemas import ContractError
from xmdata.tasks.evaluation.accuracy import pascal50s_accuracy, valse_accuracy
from xmdata.tasks.evaluation.inference import marvl_accuracy, xvnli_accuracy


def test_valse_counts_strictly_higher_captions_per_phenomenon_and_averages_phenomena():
    t = pa.table({"caption_score": [0.9, 0.5, 0.7, 0.6, 0.8, 0.4],
                  "foil_score": [0.1, 0.6, 0.7, 0.2, 0.3, 0.1],
                  "phenomenon": ["counting", "counting", "counting", "plurals", "plurals", "plurals"],
                  "language": ["de"] * 6})
    result = valse_accuracy(t, "caption_score", "foil_score")
    de = result["per_language"]["de"]
    assert de["per_phenomenon"]["counting"] == {"n": 3, "correct": 1, "accuracy": pytest.approx(1 / 3),
                                                "ties": 1, "reason": None}
    assert de["per_phenomenon"]["plurals"]["accuracy"] == 1.0
    assert de["accuracy"] == pytest.approx(4 / 6)
    assert de["phenomenon_average"] == pytest.approx((1 / 3 + 1) / 2)


def pascal_table(ids):
    # two clear pairs (one right, one wrong), then tied votes and tied scores
    rows = {"id": ["p0", "p1", "p2", "p3"], "category": ["HC", "HC", "MM", "MM"],
            "score_a": [0.9, 0.2, 0.5, 0.5], "score_b": [0.1, 0.8, 0.4, 0.5],
            "votes_a": [40, 40, 24, 30], "votes_b": [8, 8, 24, 18]}
    order = [rows["id"].index(i) for i in ids]
    return pa.table({k: [v[j] for j in order] for k, v in rows.items()})


def test_pascal50s_majority_agreement_and_seeded_tie_breaks_independent_of_row_order():
    a = pascal50s_accuracy(pascal_table(["p0", "p1", "p2", "p3"]), "score_a", "score_b", "votes_a", "votes_b", seed=3)
    b = pascal50s_accuracy(pascal_table(["p3", "p1", "p0", "p2"]), "score_a", "score_b", "votes_a", "votes_b", seed=3)
    assert a == b
    assert a["per_category"]["HC"] == {"n": 2, "correct": 1, "accuracy": 0.5, "reason": None,
                                       "human_ties": 0, "metric_ties": 0}
    assert a["human_ties"] == 1 and a["metric_ties"] == 1


def test_pascal50s_tie_breaks_are_fair_coins():
    n = 4000
    t = pa.table({"id": [f"{i:05d}" for i in range(n)], "category": ["HM"] * n, "score_a": [0.7] * n,
                  "score_b": [0.2] * n, "votes_a": [24] * n, "votes_b": [24] * n})
    result = pascal50s_accuracy(t, "score_a", "score_b", "votes_a", "votes_b", seed=0)
    assert abs(result["overall"]["accuracy"] - 0.5) < 0.03  # human coin decides, 1.6 sd for n = 4000
    with pytest.raises(ContractError, match="negative vote"):
        pascal50s_accuracy(t.set_column(4, "votes_a", pa.array([-1] * n)), "score_a", "score_b", "votes_a", "votes_b")


def test_xvnli_tasks_by_hand():
    # image A: c < n < e (all right); image B: c 0.5, n 0.4, e 0.6 (n below c); image C: c = e tie, no neutral
    t = pa.table({"image_id": ["A"] * 3 + ["B"] * 3 + ["C"] * 2,
                  "label": ["contradiction", "neutral", "Entailment", "contradiction", "neutral", "entailment",
                            "contradiction", "entailment"],
                  "clip_score": [0.1, 0.2, 0.3, 0.5, 0.4, 0.6, 0.3, 0.3], "language": ["fr"] * 8})
    fr = xvnli_accuracy(t, "clip_score")["per_language"]["fr"]
    assert (fr["task1"]["n"], fr["task1"]["correct"], fr["task1"]["ties"]) == (3, 2, 1)  # A, B right; C tied
    assert (fr["task2"]["n"], fr["task2"]["correct"]) == (7, 5)  # A 3/3, B 2/3 (c-n wrong), C 0/1
    assert (fr["task3"]["n"], fr["task3"]["correct"]) == (2, 1)  # A only
    with pytest.raises(ContractError, match="label"):
        xvnli_accuracy(t.set_column(1, "label", pa.array(["maybe"] * 8)), "clip_score")


def test_marvl_tasks_by_hand():
    # caption k: trues (0.8, 0.3) and (0.6, 0.5); falses (0.4, 0.2) and (0.7, 0.55)
    t = pa.table({"caption_id": ["k"] * 4 + ["j"] * 2, "label": ["true", "TRUE", "false", "False", "1", "0"],
                  "left_score": [0.8, 0.6, 0.4, 0.7, 0.5, 0.5], "right_score": [0.3, 0.5, 0.2, 0.55, 0.1, 0.6],
                  "language": ["sw"] * 6})
    sw = marvl_accuracy(t, ["left_score", "right_score"])["per_language"]["sw"]
    # pairs (max true vs min false): 0.8>0.2, 0.8>0.55, 0.6>0.2, 0.6>0.55, and j: 0.5 = 0.5 (tie: wrong)
    assert (sw["task1"]["n"], sw["task1"]["correct"], sw["task1"]["ties"]) == (5, 4, 1)
    assert (sw["task2"]["n"], sw["task2"]["correct"]) == (1, 1)  # min(0.8, 0.6) > max(0.2, 0.55)
    assert sw["skipped_captions"] == 1  # j has one true and one false


def test_missing_score_is_refused():
    t = pa.table({"id": ["a", "b"], "caption_score": [0.5, None], "foil_score": [0.1, 0.2]})
    with pytest.raises(ContractError, match=r"caption_score.*id='b'"):
        valse_accuracy(t, "caption_score", "foil_score", None, None)
