import os
import subprocess
import sys

import numpy as np
import pytest

from xmdata.tasks.clean.text_match import (exact_matches, jaccard_pairs, minhash_matches, minhash_signatures,
                                           normalize_caption)

LONG = "a young woman in a red coat walks her small brown dog along the snowy river path at dawn"
UNRELATED = "three old fishing boats rest on the sandy beach beside a white lighthouse under grey clouds"


def pairs(m):
    return sorted(zip(m.query_index.tolist(), m.ref_index.tolist()))


def test_normalize_case_punctuation_width_whitespace():
    assert normalize_caption("A  Dog,\trunning!\n") == "a dog running"
    assert normalize_caption("ＡＢＣ　ｄｏｇ") == "abc dog"  # NFKC: full-width letters and space
    assert normalize_caption("Straße") == normalize_caption("STRASSE")  # casefold, not lower
    assert normalize_caption("می\u200cفروشد") == "میفروشد"  # ZWNJ (format char) dropped
    assert normalize_caption("  ...  ") == "" and normalize_caption(None) == ""


def test_exact_matches_normalised_forms_and_blank_never():
    texts = ["A red bicycle, by a wall.", "a RED bicycle by a   wall", "ａ ｒｅｄ bicycle by a wall!",
             "a blue bicycle by a wall", "   ", "!!"]
    m = exact_matches([normalize_caption(t) for t in texts], None, 10)
    assert pairs(m) == [(0, 1), (0, 2), (1, 2)]  # blank rows 4 and 5 are equal but never match
    assert np.all(m.measure == 1.0) and np.all(m.score == 1.0)
    assert m.query_index.dtype == np.int64 and m.measure.dtype == np.float64


def test_exact_not_across_languages_nor_same_image():
    norm = ["a dog", "a dog", "a dog", "a dog"]
    assert pairs(exact_matches(norm, None, 10, same=["en", "fr", "en", "fr"])) == [(0, 2), (1, 3)]
    # rows 0 and 1 are two annotators' captions of one image; None = no constraint
    got = pairs(exact_matches(norm, None, 10, differ=["img1", "img1", "img2", None]))
    assert got == [(0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]


def test_exact_against_reference_and_k():
    ref = ["a dog", "a cat", "a dog", "a dog"]
    m = exact_matches(["a dog", "a cat", "a cow"], ref, 2)
    assert pairs(m) == [(0, 0), (0, 2), (1, 1)]  # k=2: the first two reference rows
    m = exact_matches(["a dog"], ref, 10, same=["en"], ref_same=["en", "en", "de", "en"],
                      differ=["i"], ref_differ=["i", None, "j", "k"])
    assert pairs(m) == [(0, 3)]
    with pytest.raises(ValueError, match="a reference is given: pass keys for both sides"):
        exact_matches(["a dog"], ref, 1, same=["en"])


def test_dedup_k_limit_and_order():
    m = exact_matches(["x y"] * 6, None, 2)
    assert np.all(m.query_index < m.ref_index)
    assert np.bincount(m.query_index).max() == 2
    assert len(set(pairs(m))) == len(m)


def test_minhash_finds_one_word_change_not_unrelated():
    changed = LONG.replace("brown", "black")
    texts = [LONG, UNRELATED, changed, "a man rides a bicycle down a busy city street past the market stalls"]
    m = minhash_matches(texts, None, 5)
    assert pairs(m) == [(0, 2)]
    assert 0.6 <= m.measure[0] < 1.0 and m.score[0] == m.measure[0]
    exact = jaccard_pairs(texts, texts, np.array([0]), np.array([2]), 4)[0]
    assert m.measure[0] == pytest.approx(exact)  # the verified Jaccard, not the estimate


def test_minhash_respects_same_and_differ_and_reference():
    texts = [LONG, LONG.replace("dog", "puppy"), LONG + " again"]
    assert pairs(minhash_matches(texts, None, 5, same=["en", "de", "de"])) == [(1, 2)]
    assert pairs(minhash_matches(texts, None, 5, differ=["a", "a", "b"])) == [(0, 2), (1, 2)]
    m = minhash_matches([UNRELATED, LONG.replace("red", "blue")], texts, 5)
    assert m.query_index.tolist() == [1, 1, 1] and m.ref_index.tolist() == [0, 2, 1]  # best first
    assert np.all(np.diff(m.score) <= 0)


def test_minhash_blank_rows_never_match():
    assert len(minhash_matches(["", "", LONG, "  "], None, 5)) == 0


def test_cjk_and_thai_without_spaces():
    ja = "夕暮れの公園で二人の子供が楽しそうにサッカーをして遊んでいる"
    th = "ชามข้าวกับผักสดวางอยู่บนโต๊ะไม้สีน้ำตาลในห้องครัว"
    texts = [ja, ja.replace("サッカー", "野球"), th, th.replace("ไม้", "หิน"), "浜辺に古い漁船が三艘並んでいる"]
    assert pairs(minhash_matches(texts, None, 5)) == [(0, 1), (2, 3)]
    assert pairs(exact_matches([normalize_caption(t) for t in [ja, ja + "。"]], None, 5)) == [(0, 1)]


def test_signatures_deterministic_across_processes():
    texts = [LONG, UNRELATED, "壁のそばに赤い自転車がある", "", "ab"]
    here = minhash_signatures(texts, 32, 7, 4)
    code = ("import sys, numpy as np; from xmdata.tasks.clean.text_match import minhash_signatures; "
            f"sys.stdout.write(minhash_signatures({texts!r}, 32, 7, 4).tobytes().hex())")
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": "12345"},
                         capture_output=True, text=True, check=True).stdout
    assert bytes.fromhex(out) == here.tobytes()
    assert here.dtype == np.uint32 and np.all(here[3] == 0xFFFFFFFF) and not np.all(here[4] == 0xFFFFFFFF)
    assert not np.array_equal(here, minhash_signatures(texts, 32, 8, 4))  # the seed matters
