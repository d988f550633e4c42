import numpy as np
import pyarrow as pa
import pytest

from xmdata.schemas import ContractError
from xmdata.tasks.evaluation.caption_stats import caption_statistics, rating_shares
from xmdata.tasks.evaluation.cider import cider_scores, corpus_cider, gain_correlation, sxs_deltas
from xmdata.tasks.evaluation.tokenize import tokenize

# Crossmodal-3600 Table 5 (SxS gain, ΔCIDEr on XM3600, ΔCIDEr on the translated validation set) ...
SXS = [2.70, 3.00, 2.20, 2.70, -0.30, 1.60, 3.10, 4.30, 0.80, 2.70, -0.30, -1.70, -2.20, 6.00, 1.90, 4.00, -0.20, -0.60]
XM3600 = [2.61, 0.84, 1.37, 1.96, 1.28, 1.16, 1.22, -0.44, 1.16, 0.20, -0.33, -0.39, -0.51, 0.96, 0.47, 1.12, -0.10,
          -0.45]
VAL = [-2.78, -5.64, -4.38, -5.55, 1.56, -1.71, -2.38, 3.51, 0.00, -0.50, -0.64, -1.03, -1.10, 3.53, 3.07, 2.99, -1.10,
       -1.31]


def test_gain_correlation_reproduces_the_papers_table_6():
    ours = gain_correlation(np.array(XM3600), np.array(SXS))
    val = gain_correlation(np.array(VAL), np.array(SXS))
    assert [round(ours[k], 2) for k in ("pearson", "spearman", "kendall_tau_b", "matthews")] == [0.47, 0.38, 0.31, 0.75]
    assert [round(val[k], 2) for k in ("pearson", "spearman", "kendall_tau_b", "matthews")] == [0.19, 0.12, 0.08, 0.18]
    one_sided = gain_correlation(np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.1, 0.9]))
    assert one_sided["matthews"] is None and one_sided["pearson"] is not None
    assert gain_correlation(np.array([1.0]), np.array([2.0]))["reason"] == "fewer than two comparisons"


def test_tokenizer_splits_unspaced_scripts_into_characters():
    assert tokenize("A dog, running!") == ["a", "dog", "running"]
    assert tokenize("一只狗在跑。") == ["一", "只", "狗", "在", "跑"]
    assert tokenize("ラーメンを食べる") == ["ラ", "ー", "メ", "ン", "を", "食", "べ", "る"]
    assert tokenize("แมวนอน") == ["แ", "ม", "ว", "น", "อ", "น"]
    assert tokenize("강아지가 뛴다") == ["강아지가", "뛴다"]


def test_cider_of_exact_matches_by_hand_in_every_script():
    # Every n-gram occurs in one image of two: idf = log 2 for all, cosine 1 for n = 1..4, no length
    # penalty: CIDEr-D = 10 per image, 1000 after x100. Whitespace tokens would give zh one unigram (250).
    for first, second in (("a brown dog runs fast", "two red cars parked outside"), ("一只狗在跑", "两辆红色的车")):
        assert corpus_cider({"1": first, "2": second}, {"1": [first], "2": [second]}) == pytest.approx(1000)
    assert corpus_cider({"1": "a dog"}, {"1": ["a dog"]}) is None  # idf is zero with one image


def test_cider_scores_per_system_and_language_match_pycocoevalcap():
    from pycocoevalcap.cider.cider import Cider

    candidates = pa.table({"system": ["a", "a", "b", "b"], "language": ["en"] * 4, "image_id": ["1", "2", "1", "2"],
                           "text": ["A dog runs on grass.", "a red car", "a cat", "A red car on a road"]})
    references = pa.table({"language": ["en"] * 4, "image_id": ["1", "1", "2", "2"],
                           "text": ["A dog running on the grass.", "a brown dog runs", "A red car parked.",
                                    "red car on the road"]})
    result = cider_scores(candidates, references)["per_system"]
    gts = {"1": ["a dog running on the grass", "a brown dog runs"], "2": ["a red car parked", "red car on the road"]}
    expected, _ = Cider().compute_score(gts, {"1": ["a dog runs on grass"], "2": ["a red car"]})
    assert result["a"]["en"]["cider"] == pytest.approx(100 * expected)
    assert result["b"]["en"]["images"] == 2
    deltas, gains, rows = sxs_deltas(pa.table({"model2": ["b"], "model1": ["a"], "language": ["en"],
                                               "sxs_gain": [1.5]}), result)
    assert deltas[0] == pytest.approx(result["b"]["en"]["cider"] - result["a"]["en"]["cider"])
    with pytest.raises(ContractError, match="system/language"):
        sxs_deltas(pa.table({"model2": ["c"], "model1": ["a"], "language": ["en"], "sxs_gain": [1.0]}), result)
    with pytest.raises(ContractError, match="en/2"):
        cider_scores(candidates, references.slice(0, 2))


def test_caption_statistics_by_hand():
    t = pa.table({"text": ["A dog runs.", "A dog  runs.", "A cat sleeps", "Two birds", "一只狗在跑", "两只猫 睡觉", "",
                           "สุนัขวิ่ง"],
                  "image_id": ["1", "1", "1", "2", "3", "3", "4", "5"],
                  "language": ["en", "en", "en", "en", "zh", "zh", "zh", "th"]})
    result = caption_statistics(t)["per_language"]
    en, zh, th = result["en"], result["zh"], result["th"]
    assert (en["captions"], en["distinct_captions"], en["images_1"], en["images_2"], en["images_3plus"]) == (4, 3, 1, 1, 0)
    assert en["mean_words"] == pytest.approx((3 + 3 + 2) / 3) and en["mean_tokens"] == en["mean_words"]
    assert en["mean_chars"] == pytest.approx((11 + 12 + 9) / 3)
    assert zh["mean_words"] == pytest.approx(1.5)  # whitespace runs, as Table 1 counts them
    assert zh["mean_tokens"] == pytest.approx(5.0) and zh["mean_chars"] == pytest.approx(5.5)
    assert zh["empty_captions"] == 1 and zh["images"] == 2 and zh["images_2"] == 1
    assert zh["unspaced_script"] and th["unspaced_script"] and not en["unspaced_script"]
    assert th["mean_words"] == 1.0 and th["mean_chars"] == 9  # code points: 6 letters, 3 marks


def test_rating_shares_from_median_ratings():
    t = pa.table({"item_id": ["a", "a", "a", "b", "b", "c", "d", "d", "e"],
                  "rating": ["GOOD", "excellent", "BAD", "MEDIUM", "NOT-ENOUGH-INFO", "not-enough-info", "BAD", "GOOD",
                             "good"],
                  "language": ["fil"] * 8 + ["ar"]})
    fil = rating_shares(t)["per_language"]["fil"]
    # medians: a GOOD, b MEDIUM, c none, d BAD (lower middle of BAD, GOOD)
    assert fil == {"captions": 4, "good_plus": 0.25, "medium_plus": 0.5, "bad": 0.25, "not_enough_info": 0.25}
    with pytest.raises(ContractError, match="not on the scale"):
        rating_shares(t.set_column(1, "rating", pa.array(["GREAT"] * 9)))
