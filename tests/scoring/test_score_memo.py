"""Scoring's units in the memo of model work (tasks/scoring/score_memo.py), on the tiny open_clip: an
image's embedding by its bytes, a text's by the text, kept apart; a shard assembled from entries and
new results is the memo-off bytes; the root and pixel-limit checks run on a hit; every params field
left out of the key is proven not to decide an embedding; a planted entry shows the test can fail."""
from __future__ import annotations

import json
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from support.memo_runs import parquet_bytes, run_shard as run

from xmdata.runtime import memo
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.scoring.score_memo import IMAGE_KIND, MEMO_EXCLUDE, TEXT_KIND, packed, unpacked
from xmdata.tasks.stage_params import ScoringParams

COLOURS = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (200, 200, 30), (30, 200, 200)]


@pytest.fixture
def root(tmp_path):
    folder = tmp_path / "images"
    folder.mkdir()
    for k, colour in enumerate(COLOURS):
        Image.new("RGB", (40 + k, 30), colour).save(folder / f"{k}.png")
    return folder


def table(captions: list[str], paths: list[str] | None = None) -> pa.Table:
    paths = paths or [f"{k % len(COLOURS)}.png" for k in range(len(captions))]
    return pa.table({"id": [f"r{k}" for k in range(len(captions))], "image_path": paths, "text": captions,
                     "refs": [[f"a reference {k}"] for k in range(len(captions))]})


CAPTIONS = [f"a photo of a thing number {k}" for k in range(5)]


def stage(spec, root, references="refs", **options):
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"),
                           **{"batch_size": 4, "max_image_pixels": 100 * 100, **options})
    return clip_score_stage(params, spec, str(root), references)


def test_images_and_texts_are_served_apart_and_give_the_memo_off_bytes(tiny_models, root, tmp_path):
    spec = tiny_models["open_clip"]
    rows = table(CAPTIONS + ["", "outside"], [f"{k}.png" for k in range(5)] + ["0.png", "../escape.png"])
    off = run(stage(spec, root), rows, None)
    assert sorted(off[1].column("reason").to_pylist()) == ["empty_text", "path_outside_root"]
    location = str(tmp_path / "memo")
    first = run(stage(spec, root), rows, location)
    # 6 images (the one outside the root fails, never stored), 6 captions and their 6 references
    assert first[2] == {IMAGE_KIND: {"computed": 6, "stored": 5}, TEXT_KIND: {"computed": 12, "stored": 12}}
    second = run(stage(spec, root), rows, location)
    assert second[2] == {IMAGE_KIND: {"served": 5, "computed": 1}, TEXT_KIND: {"served": 12}}
    for got in (first, second):
        assert parquet_bytes(got[0]) == parquet_bytes(off[0]) and parquet_bytes(got[1]) == parquet_bytes(off[1])

    edited = table(["an edited caption"] + CAPTIONS[1:])  # its image served, its new text computed
    edited_off = run(stage(spec, root), edited, None)
    got = run(stage(spec, root), edited, location)
    assert got[2][IMAGE_KIND] == {"served": 5} and got[2][TEXT_KIND] == {"served": 9, "computed": 1, "stored": 1}
    assert parquet_bytes(got[1]) == parquet_bytes(edited_off[1])
    assert parquet_bytes(got[0]) == parquet_bytes(edited_off[0])


def test_the_checks_of_a_decode_run_on_a_hit(tiny_models, root, tmp_path):
    spec = tiny_models["open_clip"]
    location = str(tmp_path / "memo")
    run(stage(spec, root), table(CAPTIONS), location)
    small = stage(spec, root, max_image_pixels=40 * 30)  # images 1-4 are wider: over the limit, held or not
    off = run(small, table(CAPTIONS), None)
    got = run(small, table(CAPTIONS), location)
    assert got[2][IMAGE_KIND].get("served", 0) >= 1
    assert off[1].column("reason").to_pylist() == ["image_too_large"] * 4
    assert parquet_bytes(got[1]) == parquet_bytes(off[1]) and parquet_bytes(got[0]) == parquet_bytes(off[0])


def test_the_fields_left_out_of_the_key_do_not_decide_an_embedding(tiny_models, root, tmp_path):
    assert set(MEMO_EXCLUDE) == {"model.name_or_path", "image_root", "references_column", "embeddings", "weight",
                                 "prefix", "max_pixels"}
    spec = tiny_models["open_clip"]
    location = str(tmp_path / "memo")
    run(stage(spec, root), table(CAPTIONS), location)
    elsewhere = tmp_path / "other-root"
    shutil.copytree(root, elsewhere)
    moved_model = tmp_path / "model"
    shutil.copytree(spec.name_or_path, moved_model)
    changes = {"image_root": stage(spec, elsewhere), "references_column": stage(spec, root, references=None),
               "embeddings": stage(spec, root, embeddings="float32"), "weight": stage(spec, root, weight=1.0),
               "max_pixels": stage(spec, root, max_image_pixels=10**6)}
    for name, changed in changes.items():
        off = run(changed, table(CAPTIONS), None)
        got = run(changed, table(CAPTIONS), location)
        assert got[2][IMAGE_KIND] == {"served": 5}, name
        assert parquet_bytes(got[0]) == parquet_bytes(off[0]), name
    prefixed = run(stage(spec, root, prefix="A photo depicts"), table(CAPTIONS), location)
    assert prefixed[2][IMAGE_KIND] == {"served": 5} and prefixed[2][TEXT_KIND].get("served", 0) == 0  # other texts


def test_a_planted_entry_changes_the_bytes(tiny_models, root, tmp_path):
    """The control: the comparisons above can fail."""
    spec = tiny_models["open_clip"]
    location = str(tmp_path / "memo")
    honest = run(stage(spec, root), table(CAPTIONS), location)
    for path in (tmp_path / "memo" / IMAGE_KIND).rglob("*.parquet"):
        entries = pq.read_table(path).to_pylist()
        changed = {e["key"]: memo.canonical(packed(unpacked(json.loads(e["value"])) + 0.5)) for e in entries}
        name, rewritten = memo.entry_file(changed)  # checks made anew: served as if honest
        path.unlink()
        pq.write_table(rewritten, path.parent / name)
    planted = run(stage(spec, root), table(CAPTIONS), location)
    assert planted[2][IMAGE_KIND] == {"served": 5}
    assert parquet_bytes(planted[0]) != parquet_bytes(honest[0])


def test_a_rebuild_with_new_images_in_several_shards_gathers_them_and_writes_the_memo_off_bytes(tiny_models, root,
                                                                                                  tmp_path):
    from xmdata.flows.score import score_pairs
    from xmdata.runtime.session import execution_session

    spec = tiny_models["open_clip"]
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"), batch_size=4)
    for k in range(5, 30):  # more images, one of each size: a few shards' worth
        Image.new("RGB", (40 + k, 30), (k * 8, 255 - k * 8, 90)).save(root / f"{k}.png")
    captions = [f"a photo of a thing number {k}" for k in range(30)]

    def build(rows, out, location):
        with execution_session("inprocess"), memo.using(memo.MemoOptions(location)):
            reports, _ = score_pairs(rows, str(out), 3, str(root), params)
        return reports[-1]

    everything = table(captions, [f"{k}.png" for k in range(30)])
    build(everything, tmp_path / "off", None)
    location = str(tmp_path / "memo")
    build(everything.filter(pa.array([k % 10 != 3 for k in range(30)])), tmp_path / "warm", location)
    again = build(everything, tmp_path / "warm", location)  # 3 new rows, in the shards their ids hash to
    assert again.shards_run >= 2 and again.timing["gathered"]["units"] == 3 + 3  # 3 images, 3 captions
    assert again.timing["memo"][IMAGE_KIND]["computed"] == 3
    shards = sorted(p.relative_to(tmp_path / "off") for p in (tmp_path / "off" / "clip_score").rglob("*.parquet"))
    assert len(shards) == 6  # data and rejects of 3 shards
    for name in shards:
        assert (tmp_path / "warm" / name).read_bytes() == (tmp_path / "off" / name).read_bytes(), name


@pytest.mark.parametrize("change", ["batch_size", "decode_mode", "decode_mode_device", "model_file"])
def test_every_part_of_the_key_that_decides_an_embedding_misses_when_it_changes(tiny_models, root, tmp_path, change):
    from xmdata.models.base import ModelSpec
    from xmdata.models.tiny import cached_tiny_models

    model = tmp_path / "model"
    shutil.copytree(tiny_models["open_clip"].name_or_path, model)
    pretrained = str(model / tiny_models["open_clip"].option("pretrained").rsplit("/", 1)[-1])
    spec = ModelSpec("open_clip", str(model), options={"pretrained": pretrained})
    location = str(tmp_path / "memo")
    run(stage(spec, root), table(CAPTIONS), location)
    changed = {"batch_size": lambda: stage(spec, root, batch_size=2),
               "decode_mode": lambda: stage(spec, root, decode_mode="fast"),
               "decode_mode_device": lambda: stage(spec, root, decode_mode="device")}.get(change, lambda: stage(spec, root))()
    if change == "model_file":  # other weights at the same path
        other = cached_tiny_models(seed=1)["open_clip"].option("pretrained")
        shutil.copyfile(other, pretrained)
    counts = run(changed, table(CAPTIONS), location)[2]
    assert counts[IMAGE_KIND].get("served", 0) == 0 and counts[IMAGE_KIND]["computed"] == 5
    assert counts[TEXT_KIND].get("served", 0) == 0  # one context for the stage's units: the mode keys texts too


def test_open_clip_weights_are_keyed_by_content_wherever_they_lie_and_a_tag_by_its_hub_commit(tiny_models, tmp_path,
                                                                                               monkeypatch):
    """A `--pretrained` file outside the model's folder replaced at the same path misses; a registry
    architecture with a tag is keyed by the hub repository open_clip fetches it from, at its cached
    commit, and stays out of the memo when that is not cached."""
    from xmdata.models.base import ModelSpec
    from xmdata.models.tiny import cached_tiny_models
    from xmdata.tasks.build import unit_memo

    folder = tiny_models["open_clip"].name_or_path
    weights = tmp_path / "weights.bin"
    shutil.copyfile(tiny_models["open_clip"].option("pretrained"), weights)
    spec = ModelSpec("open_clip", folder, options={"pretrained": str(weights)})
    before = unit_memo.model_identity(spec)
    shutil.copyfile(cached_tiny_models(seed=1)["open_clip"].option("pretrained"), weights)
    assert unit_memo.model_identity(spec) != before and before["sha256"] == unit_memo.model_identity(spec)["sha256"]

    tagged = ModelSpec("open_clip", "ViT-B-32", options={"pretrained": "laion2b_s34b_b79k"})
    monkeypatch.setattr(unit_memo, "hub_commit", lambda repo, revision: None)
    assert unit_memo.model_identity(tagged) is None  # not in the hub cache here: no memo, never a guess
    monkeypatch.setattr(unit_memo, "hub_commit", lambda repo, revision: f"commit-of-{repo}")
    assert unit_memo.model_identity(tagged) == {"open_clip": "ViT-B-32", "pretrained": {
        "hub": "laion/CLIP-ViT-B-32-laion2B-s34B-b79K", "commit": "commit-of-laion/CLIP-ViT-B-32-laion2B-s34B-b79K"}}
