"""`xmdata import` of the human-judgement and benchmark files the multilingual CLIPScore paper evaluates
on, each written here in its published layout, aggregated as the paper does, checked against the score
stage's input contract and then evaluated from score output (scores stand-in: deterministic numbers)."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from xmdata.cli import main
from xmdata.tasks.evaluation.params import evaluate_options
from xmdata.tasks.evaluation.runner import run_metric
from xmdata.tasks.scoring.input import read_score_input

TOKENS = ("1000268201_693b08cb0e.jpg#0\tA child in a pink dress is climbing up a set of stairs .\n"
          "1000268201_693b08cb0e.jpg#1\tA girl going into a wooden building .\n"
          "1001773457_577c3a7d70.jpg#0\tA black dog and a spotted dog are fighting\n"
          "1001773457_577c3a7d70.jpg#1\tTwo dogs on pavement moving toward each other .\n")


def imported(tmp_path, fmt, source, *extra):
    out = tmp_path / f"out-{fmt}"
    assert main(["import", fmt, str(source), "--out", str(out), *extra]) == 0
    return read_score_input(str(out / "pairs.parquet")), json.loads((out / "import_report.json").read_text()), out


def as_score_output(pairs: pa.Table, scores: dict, rejected: tuple = ()) -> pa.Table:
    """What `score` writes for these pairs: input columns + status, error_message, clip_score."""
    ids = pairs.column("id").to_pylist()
    status = ["rejected" if i in rejected else "ok" for i in ids]
    return (pairs.drop_columns(["image_bytes"]).append_column("status", pa.array(status))
            .append_column("error_message", pa.array([f"missing_image: {i}" if s != "ok" else None
                                                      for i, s in zip(ids, status)], pa.string()))
            .append_column("clip_score", pa.array([None if s != "ok" else float(scores[i]) for i, s in zip(ids, status)],
                                                  pa.float64())))


def evaluate(metric, table, tmp_path, **overrides):
    path = tmp_path / f"scored-{metric}.parquet"
    pq.write_table(table, path)
    return run_metric(metric, evaluate_options(metric, str(path), str(tmp_path / "eval"), overrides))


def test_flickr8k_expert_own_references_kept_on_request_mean_of_three_ratings_into_correlation(tmp_path):
    (tmp_path / "Flickr8k.token.txt").write_text(TOKENS)
    (tmp_path / "ExpertAnnotations.txt").write_text(
        "1000268201_693b08cb0e.jpg\t1000268201_693b08cb0e.jpg#0\t4\t4\t3\n"
        "1000268201_693b08cb0e.jpg\t1001773457_577c3a7d70.jpg#1\t1\t1\t2\n"
        "1001773457_577c3a7d70.jpg\t1001773457_577c3a7d70.jpg#0\t3\t4\t4\n"
        "1001773457_577c3a7d70.jpg\t1000268201_693b08cb0e.jpg#1\t1\t2\t1\n"
        "1001773457_577c3a7d70.jpg\t999_missing.jpg#0\t1\t1\t1\n"
        "1001773457_577c3a7d70.jpg\t1001773457_577c3a7d70.jpg#1\t4\t5\t4\n")
    pairs, report, _ = imported(tmp_path, "flickr8k-expert", tmp_path, "--own-references")
    assert report["rows_read"] == 6 and report["refused"] == {"rating_outside_1_4": 1, "unknown_caption_id": 1}
    assert report["own_reference_pairs"] == {"count": 2, "kept": True}
    rows = {r["id"]: r for r in pairs.to_pylist()}
    first = rows["1000268201_693b08cb0e.jpg|1000268201_693b08cb0e.jpg#0"]
    assert first["own_reference"] and not rows["1000268201_693b08cb0e.jpg|1001773457_577c3a7d70.jpg#1"]["own_reference"]
    assert first["rating"] == pytest.approx(11 / 3) and first["expert_ratings"] == [4, 4, 3]
    assert first["text"].startswith("A child in a pink dress") and first["image_path"] == "1000268201_693b08cb0e.jpg"
    assert first["refs"] == ["A girl going into a wooden building ."]  # the candidate is not its own reference
    scores = {i: r["rating"] + 0.1 * k for k, (i, r) in enumerate(rows.items())}  # same order as the ratings
    result = evaluate("correlation", as_score_output(pairs, scores), tmp_path).result
    assert result["overall"]["n"] == 4 and result["overall"]["kendall_tau_c"] == pytest.approx(1.0)


def test_flickr8k_crowdflower_share_of_yes_votes(tmp_path):
    (tmp_path / "Flickr8k.token.txt").write_text(TOKENS)
    (tmp_path / "CrowdFlowerAnnotations.txt").write_text(
        "1000268201_693b08cb0e.jpg\t1000268201_693b08cb0e.jpg#0\t1.0\t3\t0\n"
        "1000268201_693b08cb0e.jpg\t1001773457_577c3a7d70.jpg#0\t0.25\t1\t3\n"
        "1001773457_577c3a7d70.jpg\t1001773457_577c3a7d70.jpg#1\tmany\t1\t3\n")
    pairs, report, _ = imported(tmp_path, "flickr8k-cf", tmp_path)
    assert pairs.column("rating").to_pylist() == [1.0, 0.25] and report["refused"] == {"votes_not_numbers": 1}
    assert pairs.column("yes_votes").to_pylist() == [3, 1]


def test_flickr8k_wrong_layout_names_the_line(tmp_path, capsys):
    (tmp_path / "Flickr8k.token.txt").write_text(TOKENS)
    (tmp_path / "ExpertAnnotations.txt").write_text("a.jpg\ta.jpg#0\t4\t4\t4\nimage,caption,rating\n")
    assert main(["import", "flickr8k-expert", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "not the flickr8k-expert layout" in err and "line 2" in err and not (tmp_path / "out").exists()


def test_composite_correctness_csv_one_pair_per_candidate(tmp_path):
    header = ["HITId", "Input.image_url", "Input.text1", "Input.text2", "Input.text3",
              "Answer.Q1Answer", "Answer.Q2Answer", "Answer.Q3Answer"]
    lines = [";".join(header),
             ";".join(["h1", "http://x/Flickr8k/1000268201_693b08cb0e.jpg", "a child", "a girl", "a dog", "5", "4", "1"]),
             ";".join(["h2", "http://x/Flickr8k/1001773457_577c3a7d70.jpg", "two dogs", "a cat", "dogs", "5", "x", "4"]),
             "summary;;", ""]
    (tmp_path / "8k_correctness.csv").write_text("\n".join(lines))
    (tmp_path / "8k_throughness.csv").write_text("\n".join(lines[:2]).replace(";5;4;1", ";2;3;4"))
    pairs, report, _ = imported(tmp_path, "composite", tmp_path)
    assert pairs.num_rows == 5 and report["refused"] == {"malformed_row": 1, "rating_not_a_number": 1}
    first = pairs.to_pylist()[0]
    assert (first["id"], first["image_path"], first["rating"]) == ("8k/1000268201_693b08cb0e.jpg#1",
                                                                   "flickr8k/1000268201_693b08cb0e.jpg", 5.0)
    assert pairs.column("thoroughness").to_pylist() == [2.0, 3.0, 4.0, None, None]
    assert "8k_throughness.csv" in report["layout"]


def _pascal_files(folder):
    from scipy.io import savemat

    pairs = np.empty((1, 2), dtype=object)
    pairs[0, 0] = np.array(["2008_000032.jpg", "a plane on the ground", "a red car"], dtype=object)
    pairs[0, 1] = np.array(["2008_000033.jpg", "a man rides a horse", "a horse in a field"], dtype=object)
    votes = [("ref", "a plane on the ground", "a red car", 1)] * 3 + [("ref", "a plane on the ground", "a red car", 2)]
    votes += [("ref2", "a man rides a horse", "a horse in a field", 2)] * 3 + [("ref2", "a man rides a horse", "a horse in a field", 1)]
    triplets = np.empty((1, len(votes)), dtype=object)
    for j, (r, a, b, d) in enumerate(votes):
        triplets[0, j] = np.array([r, a, b, float(d)], dtype=object)
    (folder / "pyCIDErConsensus").mkdir()
    savemat(folder / "pyCIDErConsensus" / "pair_pascal.mat", {"new_input": pairs, "category": np.array([[1, 4]])})
    savemat(folder / "pyCIDErConsensus" / "consensus_pascal.mat", {"triplets": triplets})


def test_pascal50s_votes_counted_and_pairs_put_back_for_evaluation(tmp_path):
    _pascal_files(tmp_path)
    pairs, report, _ = imported(tmp_path, "pascal50s", tmp_path)
    rows = pairs.to_pylist()
    assert [(r["id"], r["score_as"], r["votes_a"], r["votes_b"], r["category"]) for r in rows] == [
        ("pair00000#a", "score_a", 3, 1, "HC"), ("pair00000#b", "score_b", 3, 1, "HC"),
        ("pair00001#a", "score_a", 1, 3, "MM"), ("pair00001#b", "score_b", 1, 3, "MM")]
    assert rows[0]["refs"] == ["ref"] * 4 and "4 judgements per pair" in report["layout"]
    scores = {"pair00000#a": 0.9, "pair00000#b": 0.1, "pair00001#a": 0.8, "pair00001#b": 0.2}
    result = evaluate("pascal50s", as_score_output(pairs, scores), tmp_path).result
    assert result["per_category"]["HC"]["accuracy"] == 1.0 and result["per_category"]["MM"]["accuracy"] == 0.0


def test_pascal50s_not_a_mat_file_is_refused(tmp_path, capsys):
    (tmp_path / "pair_pascal.mat").write_text("not matlab")
    (tmp_path / "consensus_pascal.mat").write_text("not matlab")
    assert main(["import", "pascal50s", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "not the pascal50s layout" in capsys.readouterr().err and not (tmp_path / "out").exists()


VALSE = {
    "existence_test_0": {"dataset": "visual7w", "original_split": "test", "dataset_idx": "v7w_1",
                         "linguistic_phenomena": "existence", "image_file": "v7w_1.jpg",
                         "caption": "There are no people.", "foil": "There are people.", "classes": "people",
                         "classes_foil": "people", "mturk": {"foil": 0, "caption": 3, "other": 0}},
    "existence_test_1": {"dataset": "visual7w", "original_split": "test", "dataset_idx": "v7w_2",
                         "linguistic_phenomena": "existence", "image_file": "v7w_2.jpg",
                         "caption": "There is a dog.", "foil": "There is no dog.", "classes": "dog",
                         "classes_foil": "dog", "mturk": {"foil": 2, "caption": 1, "other": 0}},
    "existence_test_2": {"dataset": "visual7w", "original_split": "test", "dataset_idx": "v7w_3",
                         "linguistic_phenomena": "existence", "image_file": "v7w_3.jpg",
                         "caption": "There are clouds.", "foil": "There are no clouds.", "classes": "clouds",
                         "classes_foil": "clouds", "mturk": {"foil": 0, "caption": 2, "other": 1}},
}


def test_valse_caption_and_foil_pairs_evaluated_from_score_output_with_a_refused_pair(tmp_path):
    (tmp_path / "existence.json").write_text(json.dumps(VALSE))
    pairs, report, _ = imported(tmp_path, "valse", tmp_path, "--valid-only")
    assert report["left_out_not_valid"] == 1 and pairs.num_rows == 4
    assert pairs.column("image_path").to_pylist()[0] == "visual7w/v7w_1.jpg"
    scores = {"existence/existence_test_0#caption": 0.9, "existence/existence_test_0#foil": 0.2,
              "existence/existence_test_2#caption": 0.1, "existence/existence_test_2#foil": 0.5}
    scored = as_score_output(pairs, scores, rejected=("existence/existence_test_2#foil",))
    report = evaluate("valse", scored, tmp_path)
    assert report.result["per_language"]["en"]["n"] == 1 and report.result["per_language"]["en"]["accuracy"] == 1.0
    left_out = report.result["left_out"]["scored-valse.parquet"]
    assert left_out == {"rejected_pairs": 1, "items_with_a_rejected_pair": 1}
    assert "Left out" in report.markdown
    lacking = as_score_output(pairs, scores).slice(0, 3)  # an item whose foil pair is not in the table at all
    assert evaluate("valse", lacking, tmp_path).result["left_out"]["scored-valse.parquet"] == {"incomplete_items": 1}


def test_valse_file_that_is_a_list_is_refused(tmp_path, capsys):
    (tmp_path / "existence.json").write_text(json.dumps(list(VALSE.values())))
    assert main(["import", "valse", str(tmp_path), "--out", str(tmp_path / "out")]) == 2
    assert "not the valse layout" in capsys.readouterr().err


def test_xvnli_hypotheses_per_language_into_evaluation(tmp_path):
    folder = tmp_path / "annotations" / "fr"
    folder.mkdir(parents=True)
    lines = [{"gold_label": label, "sentence1": "Un homme lit.", "sentence2": f"hyp {label}", "captionID": "759822302.jpg#2",
              "pairID": f"759822302.jpg#2r1{label[0]}", "Flikr30kID": "759822302"}
             for label in ("contradiction", "neutral", "entailment")]
    lines.append({**lines[0], "gold_label": "-", "pairID": "759822302.jpg#2r2c"})
    (folder / "test.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    (folder / "train_1.jsonl").write_text(json.dumps(lines[0]) + "\n")  # few-shot training file: not read
    machine = tmp_path / "annotations_machine-translate" / "fr"  # the same pairs, machine-translated
    machine.mkdir(parents=True)
    (machine / "test.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines[:3]))
    pairs, report, _ = imported(tmp_path, "xvnli", tmp_path)  # the human-written test set only
    assert report["rows_read"] == 4 and report["refused"] == {"no_gold_label": 1}
    assert set(pairs.column("language").to_pylist()) == {"fr"} and pairs.num_rows == 3
    assert pairs.column("image_path").to_pylist()[0] == "759822302.jpg"
    assert pairs.column("id").to_pylist()[0] == "fr:759822302.jpg#2r1c"
    pairs = pairs.filter(pc.equal(pairs.column("source_file"), "fr"))
    scores = dict(zip(pairs.column("id").to_pylist(), [0.1, 0.5, 0.9]))
    result = evaluate("xvnli", as_score_output(pairs, scores), tmp_path).result
    assert result["per_language"]["fr"]["task3"]["accuracy"] == 1.0


def test_marvl_left_and_right_images_put_back_on_one_row(tmp_path):
    common = {"concept": "82-铅笔", "language": "zh", "caption": "左圖有好幾隻鉛筆。", "chapter": "Cognition",
              "annotator_info": {"annotator_id": "zh_01", "age": 25}}
    lines = [{**common, "left_img": f"82-{k}.jpg", "right_img": f"82-{k + 1}.jpg", "id": f"zh-{k}",
              "label": k % 2 == 0} for k in range(4)]
    (tmp_path / "marvl-zh.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in lines))
    pairs, _, _ = imported(tmp_path, "marvl", tmp_path)
    assert pairs.num_rows == 8 and pairs.column("image_path").to_pylist()[0] == "zh/images/82-铅笔/82-0.jpg"
    assert pairs.column("id").to_pylist()[:2] == ["marvl-zh:zh-0#left", "marvl-zh:zh-0#right"]
    scores = {i: (0.9 if int(i.rsplit("-", 1)[1].split("#")[0]) % 2 == 0 else 0.1) for i in pairs.column("id").to_pylist()}
    result = evaluate("marvl", as_score_output(pairs, scores), tmp_path).result
    assert result["per_language"]["zh"]["task1"]["accuracy"] == 1.0


def test_mmmeb_reads_score_output_leaving_out_the_refused_row(tmp_path):
    embeddings = pa.FixedSizeListArray.from_arrays(pa.array(np.eye(4, dtype=np.float32).ravel()), 4)
    table = pa.table({"id": ["a", "b", "c", "d"], "task": ["t"] * 4, "language": ["fr"] * 4,
                      "status": ["ok", "ok", "ok", "rejected"], "error_message": [None, None, None, "missing_image: d"],
                      "clip_score": [1.0, 1.0, 1.0, None],
                      "text_embedding": embeddings, "image_embedding": pa.array(
                          [e if i < 3 else None for i, e in enumerate(embeddings.to_pylist())], embeddings.type)})
    report = evaluate("mmmeb", table, tmp_path, query_column="text_embedding", target_column="image_embedding")
    assert report.result["per_group"][0]["n"] == 3 and report.result["per_group"][0]["p_at_1"] == 1.0
    assert report.result["left_out"]["scored-mmmeb.parquet"]["rejected_pairs"] == 1
