"""COMETKiwi with one Trainer per process and token-budget batches: the same scores as comet's own
predict in float32, no Trainer built per call, and bfloat16 weights on request."""
from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from xmdata.tasks.translation.options import FilterOptions
from xmdata.models.base import ModelSpec
from xmdata.models.cometkiwi import CometKiwiEstimator
from xmdata.models.token_batches import length_sorted_batches

WORDS = "the a dog cat house red small runs sees water tree and child book".split()
SOURCES = [" ".join(WORDS[(i * 5 + j) % len(WORDS)] for j in range(1 + i % 17)) for i in range(60)]
TRANSLATIONS = [" ".join(reversed(s.split()))[: 3 + 7 * (i % 9)] for i, s in enumerate(SOURCES)]


def estimator(tiny_models, **options) -> CometKiwiEstimator:
    """The estimator as a run builds it: FilterOptions' qe_* fields (their defaults) become its options."""
    filters = FilterOptions(qe_model=tiny_models["cometkiwi"].name_or_path, **{f"qe_{k}": v for k, v in options.items()})
    model = CometKiwiEstimator(filters.qe_spec())
    model.load()
    return model


def test_token_batches_cover_every_pair_once_within_both_budgets():
    lengths = [5, 40, 12, 12, 3, 90, 7, 40]
    batches = length_sorted_batches(lengths, max_tokens=100, max_items=3)  # the one batching function
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert batches[0] == [5]  # longest first, alone when it fills the budget
    for batch in batches:
        assert len(batch) <= 3
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) <= 100
        assert [lengths[i] for i in batch] == sorted((lengths[i] for i in batch), reverse=True)


def test_scores_match_comets_own_predict_in_float32_with_one_trainer(tiny_models, monkeypatch):
    import pytorch_lightning

    model = estimator(tiny_models, batch_size=8, batch_tokens=200)  # many small batches
    pairs = model.prepare(SOURCES, TRANSLATIONS)
    reference = model.model.predict(pairs, batch_size=16, gpus=0, progress_bar=False, num_workers=0).scores
    trainer = model.trainer
    built = []
    monkeypatch.setattr(pytorch_lightning, "Trainer", lambda *a, **k: built.append(k))
    scores = model.predict(pairs)
    assert scores == pytest.approx(reference, abs=1e-6)
    assert model.predict(pairs[:7]) == pytest.approx(reference[:7], abs=1e-6)
    assert model.predict([]) == []
    assert built == [] and model.trainer is trainer  # reused, never rebuilt per call


def test_bfloat16_weights_give_close_finite_scores(tiny_models):
    import torch

    full = estimator(tiny_models).predict(estimator(tiny_models).prepare(SOURCES, TRANSLATIONS))
    half = estimator(tiny_models, precision="bfloat16")
    assert next(half.model.parameters()).dtype == torch.bfloat16
    scores = half.predict(half.prepare(SOURCES, TRANSLATIONS))
    assert all(math.isfinite(s) for s in scores)
    assert scores == pytest.approx(full, abs=0.02)


def test_float16_qe_needs_a_gpu():
    with pytest.raises(ValidationError, match="float16 needs a CUDA device"):
        FilterOptions(qe_precision="float16")
    assert FilterOptions(qe_precision="bfloat16").qe_spec().option("precision") == "bfloat16"


def test_the_estimator_declares_no_default_of_its_own(tiny_models):
    """A spec without the options FilterOptions fills is refused in one line, not run with other defaults."""
    from xmdata.models.base import ModelError

    with pytest.raises(ModelError, match="batch_size: Field required"):
        CometKiwiEstimator(ModelSpec("cometkiwi", tiny_models["cometkiwi"].name_or_path))
