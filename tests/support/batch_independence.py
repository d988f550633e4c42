"""How far rows' results move with the rows beside them, per model stage, through the stages' own
batching code: each row run alone vs all rows in one call (and, for QE, among other batch-mates).
Run in this process, or as `python -m support.batch_independence` (from tests/) in a process with
other CPU kernels; prints JSON."""
from __future__ import annotations

import json
import random

WORDS = "the a dog cat house red small runs sees water tree and child book man woman".split()
# Texts of many lengths, several of each: batches of one length hold several rows, of a few sizes.
TEXTS = [" ".join(WORDS[(i * 7 + j * 3) % len(WORDS)] for j in range(3 + i % 6)) for i in range(30)]


def translator_differences(spec) -> dict:
    from xmdata.models.m2m100 import M2M100Translator
    from xmdata.models.oom_backoff import BatchSizes
    from xmdata.tasks.translation.beam_search import beam_search
    from xmdata.tasks.translation.options import TranslatorOptions

    model = M2M100Translator(spec)
    model.load()
    options = TranslatorOptions(model=spec.name_or_path, num_beams=4, num_candidates=2, batch_size=4)
    units = [{"text": t, "tokens": n} for t, n in zip(TEXTS, model.token_lengths(TEXTS, "en", "fr"))]

    def run(some):
        return {u["text"]: c for u, c in beam_search(model, some, lambda u: u["text"], "en", "fr", options, BatchSizes())}

    together = run(units)
    alone = {u["text"]: run([u])[u["text"]] for u in units}
    texts = sum([c.text for c in alone[t]] != [c.text for c in together[t]] for t in together)
    drift = max(abs(a.sequence_score - b.sequence_score) for t in together for a, b in zip(alone[t], together[t]))
    return {"translation_texts": int(texts), "sequence_score_drift": drift}


def estimator_differences(spec) -> dict:
    from xmdata.models.cometkiwi import CometKiwiEstimator
    from xmdata.tasks.translation.options import FilterOptions

    model = CometKiwiEstimator(FilterOptions(qe_model=spec.name_or_path, qe_batch_size=4).qe_spec())
    model.load()
    pairs = model.prepare(TEXTS, [" ".join(reversed(t.split())) for t in TEXTS])
    together = model.predict(pairs)
    shuffled = random.Random(0).sample(range(len(pairs)), len(pairs))[:11]  # another set of batch-mates
    some = dict(zip(shuffled, model.predict([pairs[i] for i in shuffled])))
    alone = [model.predict([p])[0] for p in pairs]
    drift = max([abs(a - b) for a, b in zip(alone, together)] + [abs(some[i] - together[i]) for i in shuffled])
    return {"qe_score_drift": drift, "qe_scores_changed": sum(a != b for a, b in zip(alone, together))}


def scorer_differences(spec) -> dict:
    import numpy as np
    from PIL import Image

    from xmdata.models.oom_backoff import BatchSizes
    from xmdata.models.open_clip_scorer import OpenClipScorer
    from xmdata.tasks.scoring.score import embed_with_backoff, encode_texts

    model = OpenClipScorer(spec)
    model.load()
    together, _ = encode_texts(model, TEXTS, 8, BatchSizes())
    alone = np.stack([encode_texts(model, [t], 8, BatchSizes())[0][0] for t in TEXTS])
    rng = np.random.default_rng(0)
    pixels = [model.preprocess(Image.fromarray(rng.integers(0, 256, (40, 48, 3), dtype=np.uint8)))
              for _ in range(12)]

    def images(part):
        return embed_with_backoff(part, lambda p: model.predict((model.stack_pixels(p), None))[0], 8, BatchSizes())

    all_images = np.stack(images(pixels))
    images_alone = np.stack([images([p])[0] for p in pixels])
    # The control: the same model, batches left at their own size, does move with its batch-mates.
    unpadded = model.predict((None, model.tokenizer(TEXTS[:8])))[1]
    control = np.stack([model.predict((None, model.tokenizer([t])))[1][0] for t in TEXTS[:8]])
    return {"text_embedding_drift": float(np.abs(alone - together).max()),
            "image_embedding_drift": float(np.abs(images_alone - all_images).max()),
            "text_embeddings_changed": int((alone != together).any(axis=1).sum()),
            "control_unpadded_changed": int((control != unpadded).any(axis=1).sum())}


def differences() -> dict:
    from xmdata.models.tiny import cached_tiny_models

    specs = cached_tiny_models(seed=0)
    return {**translator_differences(specs["m2m100"]), **estimator_differences(specs["cometkiwi"]),
            **scorer_differences(specs["open_clip"])}


if __name__ == "__main__":
    print(json.dumps(differences()))
