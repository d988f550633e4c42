"""A release's `dedup:` and `contamination:` sections: run before the stages that select, label and
score, their refusals published with reasons (an image takes its captions with it), their matches
published as clean_matches, the card saying what was checked against what."""
from __future__ import annotations

import json
import shutil

import pyarrow.parquet as pq
import pytest
from PIL import Image
from support.cli_in_process import run_xmdata

from xmdata.data import sample_path


@pytest.fixture
def inputs(tmp_path):
    """The sample's first 40 images, one of them again as a half-size JPEG (img-dup); the sample's
    captions with one caption of img-dup and one copy of another caption under another image; a
    training table holding one of the captions."""
    folder = tmp_path / "inputs"
    (folder / "images").mkdir(parents=True)
    lines = open(sample_path("images.csv"), encoding="utf-8").read().splitlines()[:41]
    for line in lines[1:]:
        name = line.split(",")[3]
        shutil.copy(sample_path(name), folder / name)
    Image.open(folder / "images" / "img-0003.png").convert("RGB").resize((64, 64)).save(folder / "images" / "dup.jpg")
    latitude, longitude = lines[4].split(",")[1:3]
    lines.append(f"img-dup,{latitude},{longitude},images/dup.jpg,CC0-1.0")
    (folder / "images.csv").write_text("\n".join(lines) + "\n")
    captions = [json.loads(line) for line in open(sample_path("captions.jsonl"), encoding="utf-8")]
    captions.append({"id": "cap-dup-image", "text": "A caption of the copied image.", "language": "en",
                     "image_id": "img-dup"})
    captions.append({**captions[1], "id": "cap-copy", "image_id": "img-0005"})
    with open(folder / "captions.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps(c) + "\n" for c in captions)
    with open(folder / "qa.jsonl", "w", encoding="utf-8") as f:  # MMEB-style instances naming their images
        for n, image in enumerate(["images/dup.jpg", "images/img-0001.png"]):
            f.write(json.dumps({"id": f"qa-{n}", "task": "A-OKVQA", "query": "<|image_1|>\nWhat is this?",
                                "positive": "A picture", "image": image}) + "\n")
    with open(folder / "train.jsonl", "w", encoding="utf-8") as f:
        f.write(json.dumps({"id": "train-7", "text": captions[2]["text"].upper(), "language": "en"}) + "\n")
    return folder, captions


def test_a_release_checks_its_inputs_before_selecting_labelling_and_publishes_why(inputs, tmp_path):
    folder, captions = inputs
    config = folder / "release.yaml"
    config.write_text(
        "name: clean-demo\nshards: 2\n"
        "dedup: {}\n"
        "contamination: {against: [train.jsonl]}\n"
        "language_id: {input: captions.jsonl}\n"
        "image_selection: {input: images.csv, per_language: 1}\n"
        "qa_translation: {input: qa.jsonl, targets: [fr], translator: {backend: madlad, model: 'tiny:madlad', "
        "num_beams: 1, num_candidates: 1}}\n")
    out = tmp_path / "release"
    result = run_xmdata(["release", "--config", config, "--out", out, "-q", "--executor", "inprocess"], {
        **__import__("os").environ})
    assert result.returncode == 0, result.stderr[-3000:]
    images_rejects = {r["row_id"]: (r["reason"], r["value"]) for r in
                      pq.read_table(out / "rejects" / "clean_images.parquet").to_pylist()}
    assert images_rejects["img-dup"] == ("near_duplicate", "img-0003")
    # (The sample's 32x32 drawn icons are no photographs: two of them, img-0038 and img-0012, are 4 bits apart.)
    assert {reason for reason, _ in images_rejects.values()} == {"near_duplicate"}
    caption_rejects = {r["row_id"]: (r["reason"], r["value"]) for r in
                       pq.read_table(out / "rejects" / "clean_captions.parquet").to_pylist()}
    assert caption_rejects["cap-dup-image"] == ("image_near_duplicate", "img-dup")
    assert caption_rejects["cap-copy"] == ("near_duplicate", captions[1]["id"])
    assert caption_rejects[captions[2]["id"]] == ("contaminated", "train.jsonl:train-7")  # no build path
    qa = {r["row_id"]: (r["reason"], r["value"]) for r in pq.read_table(out / "rejects" / "clean_qa.parquet").to_pylist()}
    assert qa == {"qa-0": ("image_near_duplicate", "img-dup")}
    translated = set(pq.read_table(out / "rejects" / "translate_qa.parquet").column("row_id").to_pylist()) | set(
        pq.read_table(out / "data" / "qa_parallel.parquet").column("id").to_pylist())  # the tiny model's nonsense
    assert translated == {"qa-1"}  # qa-0 was never translated
    labelled = set(pq.read_table(out / "data" / "captions.parquet").column("id").to_pylist())
    cleaned = {i for i, (reason, _) in caption_rejects.items() if reason in
               ("near_duplicate", "contaminated", "image_near_duplicate")}  # the rest: the sample's own bad rows
    assert cleaned == {"cap-dup-image", "cap-copy", captions[2]["id"]} and not labelled & cleaned
    assert captions[1]["id"] in labelled
    selected = set(pq.read_table(out / "data" / "images.parquet").column("image_id").to_pylist())
    assert not selected & set(images_rejects)
    matches = pq.read_table(out / "data" / "clean_matches.parquet").to_pylist()
    assert {(m["check"], m["table"], m["id"], m["method"]) for m in matches} >= {
        ("dedup", "images", "img-dup", "image_hash"), ("dedup", "captions", "cap-copy", "exact_text"),
        ("contamination", "captions", captions[2]["id"], "exact_text")}
    card = (out / "README.md").read_text()
    assert "Clean sets" in card and "overlap with `train.jsonl`" in card
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["release"]["inputs"]["contamination.against[0]"]["path"] == "train.jsonl"
    assert run_xmdata(["release", "verify", out], dict(__import__("os").environ)).returncode == 0

    # The explore page: the clean checks' pairs, each with what both sides show, beside its group.
    page = (out / "explore" / "data.js").read_text()
    data = json.loads(page[page.index("=") + 1:page.rindex(";")])
    shown = {k: [None if c < 0 else v["values"][c] for c in v["codes"]] if isinstance(v, dict) else v
             for k, v in data["matches"].items()}  # strings that repeat are coded, as the page decodes them
    assert shown["rows"] == len(matches)
    row = shown["id"].index("img-dup")
    assert shown["path"][row] == "images/dup.jpg" and shown["match_path"][row] == "images/img-0003.png"
    assert shown["group"][row] == "img-0003" and shown["check"][row] == "dedup"

    # xmdata explain: a refused row's match (id, source, method, score) and a kept row's near-duplicates.
    explained = run_xmdata(["explain", out, "cap-copy", "--json"], dict(__import__("os").environ))
    assert explained.returncode == 0, explained.stderr
    step = next(s for t in json.loads(explained.stdout)["traces"] for s in t["steps"] if s["stage"] == "clean")
    assert step["outcome"] == "rejected" and step["reason"] == f"near_duplicate ({captions[1]['id']})"
    assert {(m["match_id"], m["method"], m["match_source"]) for m in step["values"]["matches"]} >= {
        (captions[1]["id"], "exact_text", "self")}
    image = run_xmdata(["explain", out, "img-0003", "--json"], dict(__import__("os").environ))
    step = next(s for t in json.loads(image.stdout)["traces"] for s in t["steps"] if s["stage"] == "clean")
    assert step["outcome"] == "kept" and step["values"]["matched_by"][0]["id"] == "img-dup"
    dup = run_xmdata(["explain", out, "img-dup"], dict(__import__("os").environ))
    assert dup.returncode == 0 and "near_duplicate (img-0003)" in dup.stdout and "image_hash" in dup.stdout
