"""Every backend loads through the registry and predicts, on tiny real models built offline."""
from __future__ import annotations

import hashlib
import math
import re
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from xmdata.models import registry
from xmdata.models._seq2seq import merge_duplicates
from xmdata.models.base import ModelError, ModelSpec
from xmdata.models.registry import get_model

TRANSLATORS = ["m2m100", "madlad"]
# M2M100's fixed list of 100 languages has no Telugu: the tiny M2M100 keeps that list, like the real one.
EXPECTED_LANGUAGES = {"m2m100": {"en", "fr", "de", "zh", "ar", "hi", "bn", "sw", "ja"},
                      "madlad": {"en", "fr", "de", "zh", "ar", "hi", "bn", "te", "sw", "ja"}}
KIND = {"m2m100": "translator", "madlad": "translator", "cometkiwi": "quality_estimator",
        "open_clip": "clip_scorer", "fasttext": "language_identifier"}
LANGUAGE_TOKEN = re.compile(r"__[a-z]{2,3}__|<2[a-z]+>")  # M2M100's and MADLAD's
SENTENCES = ["the dog runs", "the small red cat sees the water", "le chien court"]


@pytest.mark.parametrize("backend", TRANSLATORS)
def test_translator_candidates_are_distinct_ranked_and_free_of_language_tokens(tiny_models, backend):
    translator = get_model("translator", tiny_models[backend])
    assert EXPECTED_LANGUAGES[backend] <= set(translator.supported_languages())
    batch = translator.prepare(SENTENCES, "en", "fr")
    results = translator.predict(batch, num_beams=6, num_candidates=4, max_new_tokens=12)
    assert len(results) == len(SENTENCES)
    for candidates in results:
        texts = [c.text for c in candidates]
        ranks = [c.rank for c in candidates]
        assert 1 <= len(candidates) <= 4
        assert len(set(texts)) == len(texts)
        assert ranks == sorted(ranks) and ranks[0] == 0
        scores = [c.sequence_score for c in candidates]
        assert scores == sorted(scores, reverse=True)
        assert not any(LANGUAGE_TOKEN.search(t) for t in texts), texts
    greedy = translator.predict(batch, num_beams=1, num_candidates=1, max_new_tokens=12)
    assert all(len(c) == 1 and math.isfinite(c[0].sequence_score) for c in greedy)


@pytest.mark.parametrize("backend", TRANSLATORS)
def test_decoding_drops_special_and_language_ids_as_the_tokenizer_itself_would(tiny_models, backend):
    """decode_ids drops special tokens by id and decodes the rest as they are: the text of the
    tokenizer's own batch_decode(skip_special_tokens=True) once language tokens are dropped, for id
    sequences anywhere in the vocabulary (specials and language tokens among them, at any place)."""
    translator = get_model("translator", tiny_models[backend])
    tokenizer, languages = translator.tokenizer, set(translator.languages.values())
    rng = np.random.default_rng(0)
    size = translator.model.config.vocab_size  # the model's: M2M100's has ids the tokenizer has no piece for
    assert languages and size > len(tokenizer) or backend != "m2m100"
    specials = sorted(languages | set(tokenizer.all_special_ids))
    sequences = [[int(i) for i in rng.integers(0, size, rng.integers(1, 30))] for _ in range(300)]
    sequences += [[int(rng.choice(specials)) if rng.random() < 0.3 else int(rng.integers(0, size))
                   for _ in range(rng.integers(1, 30))] for _ in range(300)]
    sequences += [tokenizer(c.text)["input_ids"] for target in ("fr", "ar")
                  for cs in translator.predict(translator.prepare(SENTENCES, "en", target), 4, 4, 20) for c in cs]
    theirs = [text.strip() for text in tokenizer.batch_decode(
        [[t for t in seq if t not in languages] for seq in sequences], skip_special_tokens=True)]
    assert translator.decode_ids(sequences) == theirs
    assert sum(bool(t) for t in theirs) > 500  # text, not only empty strings


@pytest.mark.parametrize("backend", TRANSLATORS)
def test_unsupported_target_language_is_refused_before_generation(tiny_models, backend):
    translator = get_model("translator", tiny_models[backend])
    with pytest.raises(ValueError, match=r"'xx' is not supported.*supported: .*\bfr\b"):
        translator.prepare(SENTENCES, "en", "xx")
    with pytest.raises(ValueError, match="num_candidates"):
        translator.predict(translator.prepare(SENTENCES, "en", "fr"), num_beams=2, num_candidates=3,
                           max_new_tokens=4)


def test_duplicate_candidates_keep_the_best_rank():
    merged = merge_duplicates(["a", "b", "a", "c"], [-0.1, -0.2, -0.3, -0.4])
    assert [(c.text, c.rank, c.sequence_score) for c in merged] == [
        ("a", 0, -0.1), ("b", 1, -0.2), ("c", 3, -0.4)]


def test_cometkiwi_gives_one_finite_score_per_pair_in_input_order(tiny_models):
    from xmdata.tasks.translation.options import FilterOptions

    estimator = get_model("quality_estimator", FilterOptions(qe_model=tiny_models["cometkiwi"].name_or_path).qe_spec())
    sources = ["the dog runs", "the small red cat sees the water in the house", "猫"]
    translations = ["le chien court", "le petit chat rouge voit l'eau", "chat"]
    scores = estimator.predict(estimator.prepare(sources, translations))
    assert len(scores) == 3 and all(isinstance(s, float) and math.isfinite(s) for s in scores)
    # comet sorts by length internally; each pair alone must score as it did in the batch.
    alone = [estimator.predict(estimator.prepare([s], [t]))[0] for s, t in zip(sources, translations)]
    assert alone == pytest.approx(scores, abs=1e-5)


def test_open_clip_embeddings_are_normalised_and_truncation_is_visible(tiny_models):
    from xmdata.models.open_clip_scorer import OpenClipScorer

    scorer = get_model("clip_scorer", tiny_models["open_clip"])
    images = [Image.new("RGB", (48, 40), (200, 30, 30)), Image.new("L", (20, 20), 128)]
    texts = ["a red square", "un carré rouge", "le chien court " * 20]
    image_emb, text_emb = scorer.predict(scorer.prepare(images, texts))
    assert image_emb.shape == (2, scorer.embed_dim) and text_emb.shape == (3, scorer.embed_dim)
    assert image_emb.dtype == np.float32 and text_emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(image_emb, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(text_emb, axis=1), 1.0, atol=1e-5)
    assert scorer.truncated(texts) == [False, False, True]
    assert scorer.token_lengths(texts)[2] > scorer.context_length
    # A second, independent load gives the same embeddings: the saved weights were used, not a random init.
    fresh = OpenClipScorer(tiny_models["open_clip"])
    fresh.load()
    np.testing.assert_allclose(fresh.predict(fresh.prepare(images, texts))[1], text_emb, atol=1e-6)


def test_fasttext_labels_french_and_english(tiny_models):
    identifier = get_model("language_identifier", tiny_models["fasttext"])
    labels, probs = identifier.predict(identifier.prepare(
        ["Le chien court dans le jardin avec les enfants.", "The dog runs in the garden with the children."]))
    assert labels == ["fr", "en"] and all(0.5 < p <= 1.0 for p in probs)


@pytest.mark.parametrize("backend", sorted(KIND))
def test_missing_local_path_names_the_path(tmp_path, backend):
    missing = tmp_path / "no-such-model"
    with pytest.raises(ModelError, match=str(missing)):
        get_model(KIND[backend], ModelSpec(backend, str(missing)))


def test_get_model_loads_once_per_spec(tiny_models):
    first = get_model("translator", tiny_models["madlad"])
    loads = registry.MODELS.load_count
    assert get_model("translator", tiny_models["madlad"]) is first
    assert registry.MODELS.load_count == loads


def _weight_digests(root: Path) -> dict[str, str]:
    """sha256 of the files that carry weights or vocabularies (configs name the build dir)."""
    patterns = ("*.safetensors", "*.model", "vocab.json", "tokenizer.json")
    files = sorted(p for pattern in patterns for p in root.rglob(pattern))
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


def test_same_seed_builds_identical_weights(tiny_models, tmp_path):
    import torch

    from xmdata.models.tiny import build_tiny_models

    again = build_tiny_models(tmp_path / "again", seed=0)
    first_root = Path(tiny_models["m2m100"].name_or_path).parent
    digests = _weight_digests(first_root)
    assert len(digests) >= 8 and digests == _weight_digests(tmp_path / "again")
    # The COMET checkpoint also records the encoder's path, so compare its tensors instead.
    ckpts = [torch.load(Path(spec.name_or_path) / "checkpoints" / "model.ckpt", weights_only=False)
             for spec in (tiny_models["cometkiwi"], again["cometkiwi"])]
    ckpts = [ckpt["state_dict"] for ckpt in ckpts]
    assert ckpts[0].keys() == ckpts[1].keys()
    assert all(torch.equal(ckpts[0][k], ckpts[1][k]) for k in ckpts[0])
