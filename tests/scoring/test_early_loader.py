"""The decoders start before the model loads, from the record of its loader facts (models/loader_facts.py,
tasks/build/early_loader.py): the same bits as starting them after, and a wrong record costs time only."""
from __future__ import annotations

import json
import os
import stat

import pyarrow as pa
import pytest
from PIL import Image

from xmdata.models import registry
from xmdata.models.loader_facts import LoaderFacts, record_facts, recorded_facts
from xmdata.models.model_cache import ModelCache
from xmdata.models.pil_steps import (CenterCrop, Convert, Crop, Opaque, PilRecipe, Resize, output_bytes,
                                     recipe_from_data, recipe_to_data)
from xmdata.tasks.scoring import score
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.stage_params import ScoringParams


def test_a_recipe_record_is_data_and_reads_back_equal():
    recipe = PilRecipe((Resize((224,), 3, None), CenterCrop((224, 224)), Crop((1, 2, 30, 40)), Convert("RGB")), 224)
    data = json.loads(json.dumps(recipe_to_data(recipe)))
    assert recipe_from_data(data) == recipe
    assert recipe_to_data(PilRecipe((Resize((224,), 3), Opaque(print)), 224)) is None  # code is not recorded
    assert output_bytes(recipe) is None  # the crop of a region after the centre crop: its own shape
    assert output_bytes(PilRecipe((Resize((224,), 3), CenterCrop((224, 224))), 224)) == 224 * 224 * 3
    assert output_bytes(PilRecipe((Resize((320, 320), 2),), 320)) == 320 * 320 * 3
    assert output_bytes(PilRecipe((Resize((224,), 3),), 224)) is None  # the aspect ratio decides


def test_a_record_is_the_owners_and_a_damaged_one_is_ignored(tiny_models, tmp_path, monkeypatch):
    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    spec = tiny_models["open_clip"]
    facts = LoaderFacts(PilRecipe((Resize((32,), 3), CenterCrop((32, 32))), 32), 32)
    assert recorded_facts("clip_scorer", spec) is None
    assert record_facts("clip_scorer", spec, facts)
    assert recorded_facts("clip_scorer", spec) == facts
    [path] = [os.path.join(d, f) for d, _, files in os.walk(tmp_path / "cache") for f in files]
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(os.path.dirname(path)).st_mode) == 0o700
    for damage in ('{"key": "other"', json.dumps({"key": "x", "recipe": {}, "batch_size": 32})):
        with open(path, "w") as f:
            f.write(damage)
        assert recorded_facts("clip_scorer", spec) is None


@pytest.fixture()
def events(monkeypatch, tmp_path):
    """What a shard did, in order: `loader <recipe size>` when it started decoding, `model` when its
    model loaded; a fresh model cache (the model not held yet) and a cache folder of its own."""
    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "MODELS", ModelCache())
    seen = []
    load, loader = registry._load, score.worker_loader

    def loading(kind, spec):
        seen.append("model")
        return load(kind, spec)

    def starting(images, batch_size, decode, *args, **kwargs):
        seen.append(f"loader {decode.keywords['preprocess'].keep}")
        return loader(images, batch_size, decode, *args, **kwargs)

    monkeypatch.setattr(registry, "_load", loading)
    monkeypatch.setattr(score, "worker_loader", starting)
    return seen


def run_shard(spec, root, paths):
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"), batch_size=4,
                           embeddings="float32", decoders=2)
    stage = clip_score_stage(params, spec, str(root))
    table = pa.table({"id": [f"r{i}" for i in range(len(paths))], "image_path": paths,
                      "text": [f"a photograph, number {i}" for i in range(len(paths))]})
    return stage.fn(table, stage.params)


@pytest.fixture()
def images(tmp_path):
    paths = []
    for i in range(10):
        Image.new("RGB", (640 + 16 * i, 480), (20 * i, 255 - 20 * i, 90)).save(tmp_path / f"{i}.jpg")
        paths.append(f"{i}.jpg")
    return tmp_path, paths


def test_the_decoders_start_before_the_model_loads_once_its_facts_are_on_record(tiny_models, images, events,
                                                                                  monkeypatch):
    spec = tiny_models["open_clip"]
    first = run_shard(spec, *images)  # nothing on record: the model, then its recipe, then decoding
    assert events == ["model", "loader 32"]
    assert recorded_facts("clip_scorer", spec).recipe.keep == 32
    events.clear()
    monkeypatch.setattr(registry, "MODELS", ModelCache())  # the next process: the model not held
    second = run_shard(spec, *images)
    assert events == ["loader 32", "model"]
    assert second[0].equals(first[0]) and second[1].equals(first[1])  # the same bits
    events.clear()
    run_shard(spec, *images)  # the model held: decoding starts from the model's own facts
    assert events == ["loader 32"]


def test_a_wrong_record_costs_a_second_start_never_a_result(tiny_models, images, events, monkeypatch):
    spec = tiny_models["open_clip"]
    expected = run_shard(spec, *images)
    monkeypatch.setattr(registry, "MODELS", ModelCache())
    wrong = LoaderFacts(PilRecipe((Resize((64,), 2), CenterCrop((64, 64))), 64), 4)  # a replaced model's, say
    assert record_facts("clip_scorer", spec, wrong)
    events.clear()
    got = run_shard(spec, *images)
    assert events == ["loader 64", "model", "loader 32"]
    assert got[0].equals(expected[0]) and got[1].equals(expected[1])
    assert recorded_facts("clip_scorer", spec).recipe.keep == 32  # rewritten with the model's own


def test_a_record_that_reads_but_cannot_start_a_loader_is_ignored(tiny_models, images, events, monkeypatch):
    """A damaged record whose JSON still parses (a crop of one side, a batch of 0): the shard runs as with no
    record, and the record is written again from the model."""
    spec = tiny_models["open_clip"]
    expected = run_shard(spec, *images)
    monkeypatch.setattr(registry, "MODELS", ModelCache())
    assert record_facts("clip_scorer", spec, LoaderFacts(PilRecipe((CenterCrop((32,)),), 32), 0))
    events.clear()
    got = run_shard(spec, *images)
    assert events[-2:] == ["model", "loader 32"]
    assert got[0].equals(expected[0])
    assert recorded_facts("clip_scorer", spec).batch_size == 32


def test_a_model_whose_recipe_cannot_be_recorded_drops_its_old_record(tiny_models, tmp_path, monkeypatch):
    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    spec = tiny_models["open_clip"]
    assert record_facts("clip_scorer", spec, LoaderFacts(PilRecipe((Resize((32,), 3),), 32), 32))
    assert not record_facts("clip_scorer", spec, LoaderFacts(PilRecipe((Opaque(print),), 32), 32))
    assert recorded_facts("clip_scorer", spec) is None
