"""The traps the publishers' real files hold, each rebuilt here in a tiny fixture (facts checked against
the files themselves; docs/how-to/importers.md names each source and commit): keys repeated
across VALSE's piece files, IGLUE's translate-test folders beside the test sets, Flickr8K-Expert pairs
that judge an image's own caption, the MMEB-train hub clone with images/ and three splits a subset,
codes in another case or standard. Nothing is lost, nothing is mislabelled, and every count that
differs from the publisher's is said."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.cli import main
from xmdata.schemas.languages import LanguageCodeError, language_code

from test_import_judgements import as_score_output, evaluate, imported


def _valse_instance(key_n: int, dataset="SWiG", phenomenon="actions", caption_votes=3, classes="exercises"):
    return {"dataset": dataset, "original_split": "test", "dataset_idx": f"img_{key_n}.jpg",
            "linguistic_phenomena": phenomenon, "image_file": f"img_{key_n}.jpg", "caption": f"A man runs {key_n}.",
            "classes": classes, "classes_foil": 2 if isinstance(classes, int) else "lifts",
            "foil": f"A man lifts {key_n}.", "mturk": {"foil": 3 - caption_votes, "caption": caption_votes, "other": 0}}


def test_valse_keys_repeated_across_pieces_keep_every_instance_and_are_counted_per_piece(tmp_path, capsys):
    # As published: actant-swap and action-replacement both key actions_test_N; counting pieces share
    # counting_visual7w_N (with integer classes); coco_2017 and coco2017 name one image collection.
    pieces = {"actant-swap": {f"actions_test_{n}": _valse_instance(n, caption_votes=3 - n) for n in range(3)},
              "action-replacement": {f"actions_test_{n}": _valse_instance(n) for n in range(2)},
              "counting-hard": {f"counting_visual7w_{n}": _valse_instance(n, "visual7w", "counting", 2, 0)
                                for n in (7, 9)},
              "counting-small-quant": {"counting_visual7w_7": _valse_instance(7, "visual7w", "counting", 3, 1)},
              "relations": {"relations:coco_2017:5": _valse_instance(5, "coco_2017", "relations")}}
    for piece, data in pieces.items():
        (tmp_path / f"{piece}.json").write_text(json.dumps(data, indent=4))
    pairs, report, _ = imported(tmp_path, "valse", tmp_path)
    assert report["refused"] == {} and pairs.num_rows == 2 * 9  # every instance of every piece
    ids = pairs.column("item_id").to_pylist()
    assert "actant-swap/actions_test_0" in ids and "action-replacement/actions_test_0" in ids
    assert len(set(pairs.column("id").to_pylist())) == pairs.num_rows
    assert "coco2017/img_5.jpg" in pairs.column("image_path").to_pylist()
    counts = report["publisher_counts"]
    assert counts["read"]["instances/actant-swap"] == 3 and counts["read"]["valid/actant-swap"] == 2
    assert counts["publisher"]["instances"] == 8782 and counts["publisher"]["valid"] == 7702
    assert "instances/existence: the publisher has 534, none read (not in this source)" in counts["differences"]
    assert "count(s) differ from the publisher's" in capsys.readouterr().err
    valid, report, _ = imported(tmp_path, "valse", tmp_path, "--valid-only")
    assert report["left_out_not_valid"] == 1 and valid.num_rows == 2 * 8
    scores = {i: (0.9 if i.endswith("#caption") else 0.1) for i in pairs.column("id").to_pylist()}
    result = evaluate("valse", as_score_output(pairs, scores), tmp_path).result
    per_piece = result["per_language"]["en"]["per_phenomenon"]
    assert sorted(per_piece) == sorted(pieces)  # per piece, as the paper reports, not per merged phenomenon
    assert per_piece["action-replacement"]["n"] == 2


def _xvnli_line(label: str, hypothesis: str, n: int) -> dict:
    return {"gold_label": label, "sentence1": "premise", "sentence2": hypothesis, "captionID": "759822302.jpg#2",
            "pairID": f"759822302.jpg#2r1{n}", "Flikr30kID": "759822302"}


def _jsonl(path, rows) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows))


def test_xvnli_translate_test_folder_is_kept_out_by_default_and_english_when_asked(tmp_path, capsys):
    root = tmp_path / "XVNLI"
    labels = ("contradiction", "neutral", "entailment", "-")
    _jsonl(root / "annotations" / "ar" / "test.jsonl", [_xvnli_line(l, "يرتدي الجريدة", n) for n, l in enumerate(labels)])
    _jsonl(root / "annotations" / "en" / "test.jsonl", [_xvnli_line(l, "He wears a paper", n) for n, l in enumerate(labels)])
    _jsonl(root / "annotations" / "ar" / "train_1.jsonl", [_xvnli_line("neutral", "few-shot", 9)])
    _jsonl(root / "annotations_machine-translate" / "ar" / "test.jsonl",
           [_xvnli_line(l, "He wears newspaper on his head.", n) for n, l in enumerate(labels)])
    human, report, _ = imported(tmp_path, "xvnli", root)
    assert sorted(set(human.column("language").to_pylist())) == ["ar", "en"] and human.num_rows == 6
    assert "He wears newspaper on his head." not in human.column("text").to_pylist()
    assert report["publisher_counts"]["read"]["lines/ar"] == 4 and report["publisher_counts"]["read"]["labelled/ar"] == 3
    mt, report, _ = imported(tmp_path, "xvnli", root, "--translate-test")
    assert set(mt.column("language").to_pylist()) == {"en"} and set(mt.column("source_language").to_pylist()) == {"ar"}
    assert mt.column("id").to_pylist()[0] == "ar-translate-test:759822302.jpg#2r10"
    assert not set(mt.column("id").to_pylist()) & set(human.column("id").to_pylist())
    assert "annotations_machine-translate" in report["publisher_counts"]["source"]
    named, report, _ = imported(tmp_path, "xvnli", root, "--language", "fr")  # folders name the language: kept
    assert report["refused"] == {"no_gold_label": 2} and sorted(set(named.column("language").to_pylist())) == ["ar", "en"]
    few_shot = root / "annotations" / "ar" / "train_1.jsonl"
    assert main(["import", "xvnli", str(few_shot), "--out", str(tmp_path / "few")]) == 2
    assert "not a test file" in capsys.readouterr().err and not (tmp_path / "few").exists()
    single = root / "annotations_machine-translate" / "ar" / "test.jsonl"
    assert main(["import", "xvnli", str(single), "--out", str(tmp_path / "refused")]) == 2
    assert "--translate-test reads it" in capsys.readouterr().err and not (tmp_path / "refused").exists()


def test_marvl_translate_test_lines_say_the_source_language_but_come_out_english(tmp_path):
    line = {"concept": "82-铅笔", "language": "zh", "left_img": "82-6.jpg", "right_img": "82-1.jpg",
            "annotator_info": {"annotator_id": "zh_01"}, "chapter": "Cognition", "id": "zh-0", "label": False}
    root = tmp_path / "zero_shot"
    _jsonl(root / "annotations" / "marvl-zh.jsonl", [{**line, "caption": "左圖有好幾隻鉛筆。"}])
    _jsonl(root / "annotations_machine-translate" / "marvl-zh_gmt.jsonl",
           [{**line, "caption": "The picture on the left has several pencils."}])
    _jsonl(tmp_path / "few_shot" / "annotations" / "marvl-zh_train1.jsonl", [{**line, "caption": "训练"}])
    human, _, _ = imported(tmp_path, "marvl", tmp_path)
    assert human.column("text").to_pylist() == ["左圖有好幾隻鉛筆。"] * 2
    mt, report, _ = imported(tmp_path, "marvl", tmp_path, "--translate-test")
    assert set(mt.column("language").to_pylist()) == {"en"} and set(mt.column("source_language").to_pylist()) == {"zh"}
    assert mt.column("image_path").to_pylist()[0] == "zh/images/82-铅笔/82-6.jpg"  # the images stay the set's own
    assert mt.column("id").to_pylist()[0] == "marvl-zh_gmt:zh-0#left"
    assert report["publisher_counts"]["read"] == {f"instances/{k}": (1 if k == "zh" else None)
                                                  for k in ("id", "sw", "ta", "tr", "zh")}


TOKENS = "".join(f"{image}.jpg#{k}\t{image} caption {k} .\n" for image in ("1000_a", "2000_b") for k in range(5))


def test_flickr8k_expert_leaves_out_own_reference_pairs_and_correlates_each_judgement(tmp_path):
    (tmp_path / "Flickr8k.token.txt").write_text(TOKENS)
    (tmp_path / "ExpertAnnotations.txt").write_text(
        "1000_a.jpg\t2000_b.jpg#0\t1\t1\t2\n"      # another image's caption: a pair CLIPScore evaluates
        "1000_a.jpg\t1000_a.jpg#3\t4\t4\t4\n"      # the image's own caption: left out, counted
        "2000_b.jpg\t1000_a.jpg#1\t2\t3\t3\n"
        "2000_b.jpg\t1000_a.jpg#2\t4\t3\t4\n")
    pairs, report, _ = imported(tmp_path, "flickr8k-expert", tmp_path)
    assert pairs.num_rows == 3 and not any(pairs.column("own_reference").to_pylist())
    assert report["own_reference_pairs"] == {"count": 1, "kept": False}
    assert report["publisher_counts"]["read"]["evaluation_judgements"] == 9
    assert pairs.to_pylist()[0]["refs"] == [f"1000_a caption {k} ." for k in range(5)]  # all five of the image's
    scores = {i: s for i, s in zip(pairs.column("id").to_pylist(), (0.1, 0.5, 0.9))}
    result = evaluate("correlation", as_score_output(pairs, scores), tmp_path, rating_column="expert_ratings").result
    assert result["judgements"] == 9 and result["items"] == 3 and result["overall"]["n"] == 9
    assert 0 < result["overall"]["kendall_tau_c"] < 1  # ties among the judgements: not the mean's perfect 1


def test_flickr8k_crowdflower_keeps_every_pair_and_takes_judged_own_captions_out_of_the_references(tmp_path):
    (tmp_path / "Flickr8k.token.txt").write_text(TOKENS)
    (tmp_path / "CrowdFlowerAnnotations.txt").write_text(
        "1000_a.jpg\t1000_a.jpg#0\t1.0\t3\t0\n1000_a.jpg\t1000_a.jpg#4\t0.6666\t2\t1\n"
        "1000_a.jpg\t2000_b.jpg#1\t0.0\t0\t3\n")
    pairs, report, _ = imported(tmp_path, "flickr8k-cf", tmp_path)
    assert pairs.num_rows == 3 and pairs.column("own_reference").to_pylist() == [True, True, False]
    expected = [f"1000_a caption {k} ." for k in (1, 2, 3)]  # less both own captions judged, for every pair
    assert all(refs == expected for refs in pairs.column("refs").to_pylist())


def test_mmeb_train_hub_clone_with_images_beside_the_subsets_reads_one_split(tmp_path):
    clone = tmp_path / "MMEB-train"
    rows = {"qry": ["<|image_1|> What is shown?"], "qry_image_path": ["images/OK-VQA/Train/OK-VQA_image_0.jpg"],
            "pos_text": ["a cat"], "pos_image_path": [""], "neg_text": [""], "neg_image_path": [""]}
    (clone / "OK-VQA").mkdir(parents=True)
    for split in ("train", "original", "diverse_instruction"):  # the hub's three files a subset (train == original)
        pq.write_table(pa.table(rows), clone / "OK-VQA" / f"{split}-00000-of-00001.parquet")
    (clone / "images_zip").mkdir()
    (clone / "images_zip" / "OK-VQA.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (clone / "images" / "OK-VQA" / "Train").mkdir(parents=True)
    (clone / "images" / "OK-VQA" / "Train" / "OK-VQA_image_0.jpg").write_bytes(b"\xff\xd8")
    out = tmp_path / "out"
    assert main(["import", "mmeb-train", str(clone), "--out", str(out)]) == 0
    table = pq.read_table(out / "qa_input.parquet")
    report = json.loads((out / "import_report.json").read_text())
    assert table.num_rows == 1 and table.column("split").to_pylist() == ["train"]
    assert report["splits_not_read"] == {"OK-VQA/diverse_instruction": 1, "OK-VQA/original": 1}
    root = (out / report["image_root"]).resolve()
    assert (root / table.column("image").to_pylist()[0]).is_file()  # paths resolve from the clone's root
    assert main(["import", "mmeb-train", str(clone), "--split", "diverse_instruction", "--out", str(tmp_path / "d")]) == 0


def test_one_language_code_system_on_the_way_in(tmp_path, capsys):
    assert [language_code(c, "x") for c in ("EN", "jp", "iw", "zh_CN", "tl", "fil", "quz", "ger")] == [
        "en", "ja", "he", "zh", "fil", "fil", "quz", "de"]
    with pytest.raises(LanguageCodeError, match="f.txt line 3: 'xx' is not a language code"):
        language_code("xx", "f.txt line 3")
    # ISO 639-5 collective codes name families, private tags nothing standard: refused with the place
    for code in ("gmq", "map", "sgn", "bh", "nah", "x-klingon", "qaa"):
        with pytest.raises(LanguageCodeError, match=f"g.tsv line 2: '{code}' is not a language code"):
            language_code(code, "g.tsv line 2")
    assert [language_code(c, "x") for c in ("zh", "ar", "no", "sw")] == ["zh", "ar", "no", "sw"]  # macrolanguages stay
    maxm = {"dataset": "maxm", "version": "v1", "split": "iw", "annotations": [
        {"image_id": "k1", "image_url": "u", "qa_pairs": [{"question_id": "q1", "question": "מה זה?", "answers": ["חתול"]}]}]}
    (tmp_path / "maxm").mkdir()
    (tmp_path / "maxm" / "iw.json").write_text(json.dumps(maxm, ensure_ascii=False))
    assert main(["import", "maxm", str(tmp_path / "maxm"), "--out", str(tmp_path / "m")]) == 0
    assert pq.read_table(tmp_path / "m" / "qa.parquet").column("language").to_pylist() == ["he"]
    _jsonl(tmp_path / "xm" / "captions.jsonl", [{"image/key": "k1", "EN": {"caption": ["a dog"]}},
                                                {"image/key": "k2", "xx": {"caption": ["??"]}}])
    assert main(["import", "xm3600", str(tmp_path / "xm"), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert "captions.jsonl line 2: key 'xx'" in err and "not a language code" in err and not (tmp_path / "x").exists()
    assert main(["import", "flickr8k-cf", str(tmp_path), "--language", "english", "--out", str(tmp_path / "f")]) == 2
    assert "--language" in capsys.readouterr().err


def test_import_quiet_prints_nothing_but_still_warns_of_counts(tmp_path, capsys):
    _jsonl(tmp_path / "xm" / "captions.jsonl", [{"image/key": "k1", "image/locale": "en", "EN": {"caption": ["a dog"]}}])
    assert main(["import", "xm3600", str(tmp_path / "xm"), "--out", str(tmp_path / "out"), "--quiet"]) == 0
    captured = capsys.readouterr()
    assert captured.out == "" and "images: the publisher has 3,600, read 1" in captured.err
    assert pq.read_table(tmp_path / "out" / "captions.parquet").column("language").to_pylist() == ["en"]
    report = (tmp_path / "out" / "import_report.md").read_text()
    assert "| images | 3,600 | 1 |" in report and "count(s) differ from the publisher's" in report
