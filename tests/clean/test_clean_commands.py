"""`xmdata dedup` and `xmdata contamination` as a user runs them: what they write (matches, kept rows,
rejects with reasons, the report) and what they refuse in one line before writing anything."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata

CAPTIONS = [
    # id, text, language, image_id
    ("a1", "A red bicycle leans against a wall on a quiet street.", "en", "i1"),
    ("a2", "a red bicycle LEANS against a wall, on a quiet street", "en", "i2"),  # a1 normalised
    ("a3", "A red bicycle leans against a wall on a quiet street.", "en", "i1"),  # a1's image: no duplicate of a1
    ("a4", "A red bicycle leaning against a wall on a quiet street.", "en", "i3"),  # one word changed
    ("a5", "Two children play football in a park at sunset.", "en", "i4"),
    ("a6", "Ein rotes Fahrrad lehnt an einer Wand in einer ruhigen Straße.", "iw", "i5"),
    ("a7", "Ein rotes Fahrrad lehnt an einer Wand in einer ruhigen Straße.", "he", "i6"),  # iw and he: one language
    ("a8", "A red bicycle leans against a wall on a quiet street.", "fr", "i7"),  # another language: kept
    ("a9", "   ", "en", "i8"),
]


def write_captions(path, rows=CAPTIONS):
    with open(path, "w", encoding="utf-8") as f:
        for i, text, language, image in rows:
            f.write(json.dumps({"id": i, "text": text, "language": language, "image_id": image}) + "\n")
    return path


@pytest.fixture
def env():
    return dict(os.environ, XMDATA_EXECUTOR="inprocess")


def run(env, *args):
    result = run_xmdata([*args, "-q"], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result


def test_dedup_of_captions_groups_near_duplicates_within_a_language_and_keeps_the_first_id(env, tmp_path):
    out = tmp_path / "out"
    result = run(env, "dedup", write_captions(tmp_path / "captions.jsonl"), "--out", out, "--shards", "2")
    assert "5 of 9 rows kept" in result.stdout
    matches = pq.read_table(out / "matches.parquet").to_pylist()
    pairs = {(m["id"], m["match_id"], m["method"]) for m in matches}
    assert ("a2", "a1", "exact_text") in pairs and ("a4", "a1", "minhash") in pairs
    assert ("a7", "a6", "exact_text") in pairs  # iw is he
    assert not any({m["id"], m["match_id"]} == {"a1", "a3"} for m in matches)  # one image's captions
    assert not any("a8" in (m["id"], m["match_id"]) for m in matches)  # French is compared with French only
    for m in matches:
        assert m["match_source"] == "self" and 0 <= m["score"] <= 1 and m["id"] > m["match_id"]
        assert m["measure_unit"] == {"exact_text": "normalised_equal", "minhash": "jaccard"}[m["method"]]
    rejects = {r["row_id"]: (r["reason"], r["value"]) for r in pq.read_table(out / "rejects.parquet").to_pylist()}
    assert rejects == {"a2": ("near_duplicate", "a1"), "a4": ("near_duplicate", "a1"),
                       "a7": ("near_duplicate", "a6"), "a9": ("empty_text", "   ")}
    kept = pq.read_table(out / "kept.parquet")
    assert sorted(kept.column("id").to_pylist()) == ["a1", "a3", "a5", "a6", "a8"]
    assert kept.column_names[:4] == ["id", "text", "language", "image_id"]
    report = json.loads((out / "report.json").read_text())
    assert report["rejected"] == {"empty_text": 1, "near_duplicate": 3}
    assert report["methods"]["minhash"]["threshold"] == pytest.approx(0.6)
    assert sum(report["methods"]["minhash"]["near_threshold"]["counts"]) == report["methods"]["minhash"]["matches"]
    assert "near_duplicate" in (out / "report.md").read_text()


def test_at_most_k_matches_a_row(env, tmp_path):
    rows = [(f"c{i}", "A dog runs on the beach with a ball.", "en", f"i{i}") for i in range(6)]
    out = tmp_path / "out"
    run(env, "dedup", write_captions(tmp_path / "c.jsonl", rows), "--out", out, "--max-matches", "2",
        "--no-minhash")
    per_row = {}
    for m in pq.read_table(out / "matches.parquet").to_pylist():
        per_row[m["id"]] = per_row.get(m["id"], 0) + 1
    assert max(per_row.values()) == 2 and len(pq.read_table(out / "kept.parquet")) == 1


def test_contamination_of_captions_against_a_table_names_each_rows_best_match(env, tmp_path):
    training = write_captions(tmp_path / "train.jsonl", [
        ("t1", "Two children PLAY football in a park, at sunset!", "en", None),
        ("t2", "A cat sleeps on a sofa.", "en", None),
        ("t3", "A red bicycle leans against a wall on a quiet street.", "de", None)])  # German-labelled: not English
    out = tmp_path / "out"
    run(env, "contamination", write_captions(tmp_path / "eval.jsonl"), "--against", training, "--out", out)
    rejects = {r["row_id"]: (r["reason"], r["value"]) for r in pq.read_table(out / "rejects.parquet").to_pylist()}
    assert rejects["a5"] == ("contaminated", f"{training}:t1")
    assert {i for i, (reason, _) in rejects.items() if reason == "contaminated"} == {"a5"}
    matches = pq.read_table(out / "matches.parquet").to_pylist()
    assert {m["match_source"] for m in matches} == {str(training)}


def test_a_rerun_reuses_its_matches_and_another_reference_searches_again(env, tmp_path, monkeypatch):
    """The matching step's record (tasks/clean/match_record.py): the same signatures, references and
    params find the matches.parquet they made, untouched; a reference given by another name is searched."""
    import shutil

    import xmdata.flows.clean as clean_flow

    training = write_captions(tmp_path / "train.jsonl", [
        ("t1", "Two children PLAY football in a park, at sunset!", "en", None)])
    evaluated, out = write_captions(tmp_path / "eval.jsonl"), tmp_path / "out"
    run(env, "contamination", evaluated, "--against", training, "--out", out)
    names = ("matches.parquet", "kept.parquet", "rejects.parquet", "report.json")
    first = {name: (out / name).read_bytes() for name in names}
    searched, search = [], clean_flow.find_matches
    monkeypatch.setattr(clean_flow, "find_matches", lambda *args: searched.append(args[0]) or search(*args))
    run(env, "contamination", evaluated, "--against", training, "--out", out)
    assert searched == [] and {name: (out / name).read_bytes() for name in names} == first
    moved = shutil.copy(training, tmp_path / "moved.jsonl")
    run(env, "contamination", evaluated, "--against", moved, "--out", out)
    assert searched == ["captions"]
    assert set(pq.read_table(out / "matches.parquet").column("match_source").to_pylist()) == {str(moved)}


@pytest.mark.parametrize("args, expected", [
    (["contamination", "{captions}", "--against", "{missing}"], "not found"),
    (["contamination", "{captions}", "--against", "{images_dir}"], "holds images, the input holds captions"),
    (["contamination", "{captions}", "--against", "{empty_dir}"], "a folder with no image files"),
    (["contamination", "{captions}", "--against", "{emb_dir}"], "name it with --reference-model"),
    (["dedup", "{captions}", "--min-jaccard", "nan"], "min-jaccard"),
    (["dedup", "{captions}", "--max-hash-bits", "65"], "max-hash-bits"),
    (["dedup", "{nothing}"], "neither an images table"),
    (["dedup", "{captions}", "--model", "ViT-B-32"], "needs --pretrained"),  # random weights match nothing
    (["dedup", "{captions}", "--model", "{missing}"], "missing"),
])
def test_bad_input_is_refused_in_one_line_and_nothing_is_written(args, expected, env, tmp_path):
    captions = write_captions(tmp_path / "captions.jsonl")
    (tmp_path / "images").mkdir()
    (tmp_path / "images" / "a.png").write_bytes(b"not really")
    (tmp_path / "empty").mkdir()
    (tmp_path / "emb" / "img_emb").mkdir(parents=True)
    (tmp_path / "emb" / "text_emb").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["x"], "caption": ["y"]}), tmp_path / "nothing.parquet")
    names = {"captions": captions, "missing": tmp_path / "missing", "images_dir": tmp_path / "images",
             "empty_dir": tmp_path / "empty", "emb_dir": tmp_path / "emb", "nothing": tmp_path / "nothing.parquet"}
    out = tmp_path / "out"
    result = run_xmdata([a.format(**names) for a in args] + ["--out", out], env)
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and not out.exists()


def test_an_embeddings_folder_of_another_dimension_than_the_model_is_refused(env, tmp_path, tiny_models):
    from xmdata.tasks.clean.clip_retrieval import write_embeddings_folder

    vectors = np.eye(3, 7, dtype=np.float16)
    write_embeddings_folder(str(tmp_path / "emb"), [(vectors, {"key": ["k0", "k1", "k2"]})], kind="text")
    out = tmp_path / "out"
    result = run_xmdata(["contamination", write_captions(tmp_path / "c.jsonl"), "--against", tmp_path / "emb",
                         "--reference-model", tiny_models["open_clip"].name_or_path, "--out", out], env)
    assert result.returncode == 2 and "dimension 7" in result.stderr, result.stderr
    assert not out.exists()


def real_photos(folder):
    """Real photographs scikit-image's wheel ships, with copies a careful researcher would call the same photo."""
    from PIL import Image
    from skimage import data

    folder.mkdir(parents=True, exist_ok=True)
    astronaut, coffee, chelsea = (Image.fromarray(f()) for f in (data.astronaut, data.coffee, data.chelsea))
    astronaut.save(folder / "astronaut.png")
    coffee.save(folder / "coffee.png")
    chelsea.save(folder / "chelsea.png")
    astronaut.resize((256, 256)).save(folder / "astronaut_small.jpg", quality=58)  # 50 %, re-encoded
    w, h = coffee.size
    coffee.crop((int(w * 0.04), 0, w, int(h * 0.96))).save(folder / "coffee_cropped.png")  # 4 % off two sides
    (folder / "broken.jpg").write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    return folder


def test_dedup_of_images_finds_resized_and_cropped_copies_and_counts_an_unreadable_file(env, tmp_path):
    photos = real_photos(tmp_path / "photos")
    rows = [("p1", "astronaut.png"), ("p2", "coffee.png"), ("p3", "chelsea.png"), ("p4", "astronaut_small.jpg"),
            ("p5", "coffee_cropped.png"), ("p6", "broken.jpg")]
    table = tmp_path / "photos" / "images.csv"
    table.write_text("id,path\n" + "".join(f"{i},{p}\n" for i, p in rows))
    out = tmp_path / "out"
    run(env, "dedup", table, "--out", out, "--shards", "3")
    rejects = {r["row_id"]: (r["reason"], r["value"]) for r in pq.read_table(out / "rejects.parquet").to_pylist()}
    assert rejects["p4"] == ("near_duplicate", "p1") and rejects["p5"] == ("near_duplicate", "p2")
    assert rejects["p6"][0] == "unreadable_image" and "broken.jpg" in rejects["p6"][1]
    assert len(rejects) == 3
    kept = pq.read_table(out / "kept.parquet")
    assert sorted(kept.column("id").to_pylist()) == ["p1", "p2", "p3"]
    assert kept.column("path").to_pylist()[0] == "astronaut.png"  # as the table wrote it
    matches = pq.read_table(out / "matches.parquet").to_pylist()
    assert {(m["id"], m["match_id"]) for m in matches} == {("p4", "p1"), ("p5", "p2")}
    assert all(m["method"] == "image_hash" and m["measure_unit"] == "hamming_bits" and m["measure"] <= 8
               and m["score"] == pytest.approx(1 - m["measure"] / 64) for m in matches)
    # Resumed, not redone: a second run finds every shard finished and writes the same matches.
    again = run_xmdata(["dedup", table, "--out", out, "--shards", "3"], env)
    assert "clean_signatures: 0 shard(s) run, 3 skipped" in again.stdout
    assert pq.read_table(out / "matches.parquet").to_pylist() == matches


def test_contamination_against_an_image_folder_names_the_files_relative_path(env, tmp_path):
    photos = real_photos(tmp_path / "eval")
    training = tmp_path / "train" / "nested"
    training.mkdir(parents=True)
    (photos / "coffee.png").rename(training / "coffee.png")  # the training copy; the eval set has a crop of it
    os.symlink(photos / "chelsea.png", training / "chelsea_link.png")  # links are followed
    table = tmp_path / "eval" / "images.parquet"
    pq.write_table(pa.table({"id": ["e1", "e2", "e3"], "path": ["coffee_cropped.png", "astronaut.png", "chelsea.png"]}),
                   table)
    out = tmp_path / "out"
    run(env, "contamination", table, "--against", tmp_path / "train", "--out", out)
    rejects = {r["row_id"]: r for r in pq.read_table(out / "rejects.parquet").to_pylist()}
    assert set(rejects) == {"e1", "e3"} and all(r["reason"] == "contaminated" for r in rejects.values())
    assert rejects["e1"]["value"] == f"{tmp_path / 'train'}:nested/coffee.png"
    assert rejects["e3"]["value"].endswith(":nested/chelsea_link.png")
    report = json.loads((out / "report.json").read_text())
    assert report["by_method_and_source"] == [{"method": "image_hash", "match_source": str(tmp_path / "train"),
                                               "matches": 2, "rows": 2}]


@pytest.mark.parametrize("shard_rows", [None, 15])
def test_the_embedding_tier_searches_a_clip_retrieval_folder_with_the_named_model(shard_rows, env, tmp_path, tiny_models,
                                                                                  monkeypatch):
    """Tiny models have random weights: planted vectors check the plumbing. The folder holds the tiny
    model's own text embeddings of two eval captions (as clip-retrieval would have written them for
    training data) among unrelated unit vectors; exactly those two rows are found, cross-lingually."""
    from xmdata.models.registry import get_model
    from xmdata.tasks.clean.clip_retrieval import write_embeddings_folder
    from xmdata.tasks.clean.signatures import embedding_spec
    from xmdata.tasks.clean.params import CleanParams

    model = tiny_models["open_clip"].name_or_path
    embedder = get_model("embedder", embedding_spec(CleanParams(reference_model=model)))
    planted = embedder.embed_texts([CAPTIONS[4][1], CAPTIONS[5][1]]).astype(np.float16)
    rng = np.random.default_rng(0)
    noise = rng.standard_normal((40, planted.shape[1]))
    noise = (noise / np.linalg.norm(noise, axis=1, keepdims=True)).astype(np.float16)
    write_embeddings_folder(str(tmp_path / "emb"), [(noise[:20], {"key": [f"n{i}" for i in range(20)]}),
                                                     (np.vstack([noise[20:], planted]),
                                                      {"key": [f"n{i}" for i in range(20, 40)] + ["hit5", "hit6"]})],
                            kind="text")
    if shard_rows:  # a reference past the shard size: one index a shard of 15 rows, merged into the same matches
        monkeypatch.setattr("xmdata.tasks.clean.match.REFERENCE_SHARD_ROWS", shard_rows)
    out = tmp_path / "out"
    run(env, "contamination", write_captions(tmp_path / "c.jsonl"), "--against", tmp_path / "emb",
        "--reference-model", model, "--min-cosine", "0.999", "--no-exact-text", "--no-minhash", "--out", out)
    matches = pq.read_table(out / "matches.parquet").to_pylist()
    assert {(m["id"], m["match_id"]) for m in matches if m["id"] in ("a5", "a6")} == {("a5", "hit5"), ("a6", "hit6")}
    assert all(m["method"] == "text_embedding" and m["measure_unit"] == "cosine" for m in matches)


def test_a_copy_detection_model_saved_as_torchscript_is_the_image_embedding_tier(env, tmp_path):
    """SSCD ships its models as TorchScript; a tiny scripted network (random weights) of the same kind
    checks the plumbing: an exact copy is found at cosine 1, unrelated photos are not."""
    import torch

    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 5, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                              torch.nn.Flatten(), torch.nn.Linear(64, 16))
    torch.manual_seed(0)
    torch.jit.script(net.eval()).save(str(tmp_path / "tiny.torchscript.pt"))
    photos = real_photos(tmp_path / "photos")
    (photos / "astronaut_copy.png").write_bytes((photos / "astronaut.png").read_bytes())
    table = photos / "images.csv"
    table.write_text("id,path\np1,astronaut.png\np2,coffee.png\np3,chelsea.png\np4,astronaut_copy.png\n")
    out = tmp_path / "out"
    run(env, "dedup", table, "--out", out, "--no-image-hash", "--model", tmp_path / "tiny.torchscript.pt",
        "--model-backend", "copy_detection", "--min-cosine", "0.9999")
    matches = pq.read_table(out / "matches.parquet").to_pylist()
    assert [(m["id"], m["match_id"], m["method"]) for m in matches] == [("p4", "p1", "image_embedding")]
    assert matches[0]["measure"] == pytest.approx(1.0, abs=1e-5)
    refused = run_xmdata(["dedup", write_captions(tmp_path / "c.jsonl"), "--model", tmp_path / "tiny.torchscript.pt",
                          "--model-backend", "copy_detection", "--out", tmp_path / "o2"], env)
    assert refused.returncode == 2 and "embeds images" in refused.stderr
    (tmp_path / "not.pt").write_bytes(b"nope")
    refused = run_xmdata(["dedup", table, "--model", tmp_path / "not.pt", "--model-backend", "copy_detection",
                          "--out", tmp_path / "o3"], env)
    assert refused.returncode == 2 and "not a TorchScript model" in refused.stderr and not (tmp_path / "o3").exists()


def test_contamination_against_a_release_reads_its_published_captions(env, tmp_path, demo_release):
    """The demo release's own captions (data/captions.parquet, by its manifest) are a reference: the sample's
    captions are all in it; an images table has no images table of the release to compare with."""
    from xmdata.data import sample_path

    out = tmp_path / "out"
    run(env, "contamination", sample_path("captions.jsonl"), "--against", demo_release, "--out", out)
    report = json.loads((out / "report.json").read_text())
    published = pq.read_table(demo_release / "data" / "captions.parquet")
    found = {r["row_id"] for r in pq.read_table(out / "rejects.parquet").to_pylist() if r["reason"] == "contaminated"}
    with_text = {r["id"] for r in published.to_pylist() if r["language"] and r["text"] and r["text"].strip()}
    assert found and found >= with_text - {""}, (sorted(with_text - found), report)
    assert {m["match_source"] for m in pq.read_table(out / "matches.parquet").to_pylist()} == {str(demo_release)}
    refused = run_xmdata(["contamination", sample_path("images.csv"), "--against", demo_release,
                          "--out", tmp_path / "o2"], env)
    assert refused.returncode == 2 and "a release with no images table" in refused.stderr
