"""Out-of-memory backoff, tested on CPU by injecting CUDA's error: batches halve down to one item,
an item that fails alone is refused with reason out_of_memory, the rest come out as without the error."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest
import torch
from PIL import Image

from xmdata.models.base import ModelSpec
from xmdata.models.oom_backoff import FAILED, BatchSizes, is_out_of_memory, run_with_backoff
from xmdata.models.registry import get_model
from xmdata.tasks.translation.candidate_scores import CandidateQeShard, estimate_candidate_quality
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.stage_params import ScoringParams
from xmdata.tasks.translation.options import FilterOptions
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import translate_stage

POISON = "water"  # an item holding this runs out of memory even alone


def oom(*_):
    raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 20.00 GiB")


def test_batches_halve_down_to_one_item_and_only_that_item_fails():
    calls = []

    def run(items):
        calls.append(list(items))
        if len(items) > 2 or POISON in items:
            oom()
        return [item.upper() for item in items]

    sizes = BatchSizes()
    items = ["a", "b", "c", POISON, "e"]
    assert run_with_backoff(items, run, sizes) == ["A", "B", "C", FAILED, "E"]
    assert [len(c) for c in calls] == [5, 3, 2, 1, 2, 1, 1]  # 5 -> 3 + 2; 3 -> 2 + 1; [water, e] -> 1 + 1
    assert sizes.out_of_memory == [5, 3, 2, 1] and sizes.ran == [2, 1, 1]


def test_other_errors_propagate_and_out_of_memory_is_recognised_by_its_kind_or_message():
    with pytest.raises(ValueError, match="^bad input$"):
        run_with_backoff([1, 2], lambda items: (_ for _ in ()).throw(ValueError("bad input")))
    assert is_out_of_memory(torch.cuda.OutOfMemoryError("x"))
    assert is_out_of_memory(RuntimeError("CUDA failed with error out of memory"))  # CTranslate2's
    assert not is_out_of_memory(RuntimeError("CUDA error: device-side assert triggered"))


def test_translate_stage_rejects_only_the_unit_that_fails_alone(tiny_models, monkeypatch):
    spec = tiny_models["m2m100"]
    table = pa.table({"id": [f"t{i}" for i in range(5)],
                      "text": ["the dog runs", "a red cat", f"the {POISON}", "a small tree", "the child sees"]})
    params = TranslateParams(columns=["text"], targets=["fr"], translator=dict(
        num_beams=4, num_candidates=2, batch_tokens=4096, max_new_tokens_ratio=1.0, max_new_tokens_extra=4))
    stage = translate_stage(params, spec)
    expected, _ = stage.fn(table, stage.params)
    translator = get_model("translator", spec)
    real_predict, real_prepare = translator.predict, translator.prepare
    texts_of = {}

    def prepare(texts, source, target):
        batch = real_prepare(texts, source, target)
        texts_of[id(batch)] = list(texts)
        return batch

    def predict(batch, *args):
        texts = texts_of[id(batch)]
        if len(texts) > 2 or any(POISON in t for t in texts):
            oom()
        return real_predict(batch, *args)

    monkeypatch.setattr(translator, "prepare", prepare)
    monkeypatch.setattr(translator, "predict", predict)
    got, rejects = stage.fn(table, stage.params)
    assert rejects.column("reason").to_pylist() == ["out_of_memory"]
    assert rejects.column("row_id").to_pylist() == ["t2"] and "sizes [" in rejects.column("value")[0].as_py()
    failed = [r for r in got.to_pylist() if r["id"] == "t2"]
    assert [(r["status"], r["candidate"]) for r in failed] == [("out_of_memory", None)]
    keep = ["id", "candidate", "beam_rank", "status"]
    others = [{k: r[k] for k in keep} for r in got.to_pylist() if r["id"] != "t2"]
    assert others == [{k: r[k] for k in keep} for r in expected.to_pylist() if r["id"] != "t2"]


def test_any_other_translator_error_fails_the_text_shard(tiny_models, monkeypatch):
    """The one failure rule (tasks/translation/beam_search.py), as on the Q/A path: not a row's
    problem, so the shard fails for the executor to retry or name; no rejects are made of it."""
    params = TranslateParams(columns=["text"], targets=["fr"], translator=dict(num_beams=2, num_candidates=1))
    stage = translate_stage(params, tiny_models["m2m100"])
    translator = get_model("translator", tiny_models["m2m100"])
    monkeypatch.setattr(translator, "predict", lambda *_: (_ for _ in ()).throw(RuntimeError("device-side assert")))
    with pytest.raises(RuntimeError, match="device-side assert"):
        stage.fn(pa.table({"id": ["a"], "text": ["the dog runs"]}), stage.params)


def test_qe_backs_off_batch_by_batch_and_leaves_a_null_score_with_its_reason(tiny_models, monkeypatch):
    spec = tiny_models["cometkiwi"]
    sources = ["the dog runs", "a red cat sees", f"the {POISON}", "a tree", "the small child reads"]
    table = pa.table({"id": [f"q{i}" for i in range(5)], "source_text": sources,
                      "candidate": [s[::-1] for s in sources], "lid_match": [True] * 5,
                      "qe_score": pa.nulls(5, pa.float32())})
    params = CandidateQeShard(model=FilterOptions(qe_model=spec.name_or_path, qe_batch_size=4).qe_spec())
    expected = estimate_candidate_quality(table, params)[0].column("qe_score").to_pylist()
    estimator = get_model("quality_estimator", params.model)
    real = estimator.score_groups

    def score_groups(groups):
        if any(len(g) > 1 or any(POISON in p["src"] for p in g) for g in groups):
            oom()
        return real(groups)

    monkeypatch.setattr(estimator, "score_groups", score_groups)
    scored, rejects = estimate_candidate_quality(table, params)
    got = scored.column("qe_score").to_pylist()
    assert got[2] is None and rejects.column("reason").to_pylist() == ["out_of_memory"]
    assert rejects.column("row_id").to_pylist() == ["q2"]
    assert [s for i, s in enumerate(got) if i != 2] == pytest.approx([s for i, s in enumerate(expected) if i != 2],
                                                                      abs=1e-5)


def test_clip_scoring_refuses_the_image_that_fails_alone(tiny_models, tmp_path, monkeypatch):
    colours = [(200, 30, 30), (30, 200, 30), (30, 30, 200), (128, 128, 128), (200, 200, 30)]  # only #2 is blue
    for i, colour in enumerate(colours):
        Image.new("RGB", (40, 30), colour).save(tmp_path / f"{i}.png")
    table = pa.table({"id": [f"p{i}" for i in range(5)], "text": ["a dog", "a cat", "a tree", "water", "a book"],
                      "image_path": [f"{i}.png" for i in range(5)]})
    clip = tiny_models["open_clip"]
    stage = clip_score_stage(ScoringParams(clip_model=clip.name_or_path, batch_size=4), clip, str(tmp_path))
    expected, _ = stage.fn(table, stage.params)
    scorer = get_model("clip_scorer", tiny_models["open_clip"])
    real = scorer.predict
    blue = np.array([0.0, 0.0, 1.0])

    def predict(batch, pad_to=None):
        pixels, tokens = batch
        if pixels is not None and (len(pixels) > 2 or any(_mostly(p, blue) for p in pixels)):
            oom()
        return real(batch, pad_to=pad_to)

    monkeypatch.setattr(scorer, "predict", predict)
    kept, rejects = stage.fn(table, stage.params)
    assert rejects.column("reason").to_pylist() == ["out_of_memory"] and rejects.column("row_id").to_pylist() == ["p2"]
    assert kept.column("status").to_pylist() == ["ok", "ok", "rejected", "ok", "ok"]
    scores = kept.column("clip_score").to_pylist()
    reference = expected.column("clip_score").to_pylist()
    assert [s for i, s in enumerate(scores) if i != 2] == pytest.approx([s for i, s in enumerate(reference) if i != 2],
                                                                        abs=1e-5)


def _mostly(pixels, colour) -> bool:
    """Whether a preprocessed image's mean channel values point at `colour` (normalisation keeps order)."""
    means = pixels.float().mean(dim=(1, 2)).numpy()
    return int(np.argmax(means)) == int(np.argmax(colour)) and means.max() - np.sort(means)[-2] > 0.5


def test_an_embedding_batch_filled_to_its_size_that_runs_out_is_retried_unfilled_before_refusing():
    """The last, short batch of a scoring shard is filled to the batch size (one shape per call); when
    that filled batch does not fit, its items run as they are, then alone, before any is refused."""
    from xmdata.tasks.scoring.score import embed_with_backoff

    calls = []

    def embed(part):
        calls.append(len(part))
        if len(part) > 2:
            oom()
        return [f"embedding of {item}" for item in part]

    sizes = BatchSizes()
    assert embed_with_backoff(["a"], embed, 8, sizes) == ["embedding of a"]
    assert calls == [8, 1] and sizes.out_of_memory == [8] and sizes.ran == [1]
    calls.clear()
    assert embed_with_backoff(["a", "b", "c"], embed, 4, BatchSizes()) == [f"embedding of {x}" for x in "abc"]
    assert calls == [4, 3, 2, 1]  # filled, as they are, then halves
    assert embed_with_backoff(["a"], lambda part: oom(), 4, BatchSizes()) == [FAILED]
