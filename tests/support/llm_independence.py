"""How far an llm translator's candidates move with their batch mates, beams and samples alike, through
the stage's own batching code (tasks/translation/beam_search.py): every unit in one run with batches
of 4, each unit alone, batches of 2, and two other shard plans (the units split into halves two ways).
With a control: transformers' own sampling (torch.multinomial on the global generator) of the same
units alone and in one batch. Run in this process, or as `python -m support.llm_independence` (from
tests/) in a process with other CPU kernels; prints JSON."""
from __future__ import annotations

import json

from support.batch_independence import TEXTS as ALL_TEXTS

TEXTS = ALL_TEXTS[:12]  # 6 lengths, 2 of each: batches of two rows, ~20 s a mode on 2 busy cores

MODES = {"beam": dict(num_beams=3, num_candidates=2),
         "sampled": dict(sampling="temperature", temperature=0.8, num_beams=1, num_candidates=3)}


def candidates(model, units, options) -> dict:
    from xmdata.models.oom_backoff import BatchSizes
    from xmdata.tasks.translation.beam_search import beam_search

    return {u["text"]: c for u, c in beam_search(model, units, lambda u: u["text"], "en", "fr", options, BatchSizes())}


def plans(model, spec, mode: dict) -> dict:
    from xmdata.tasks.translation.options import TranslatorOptions

    def options(batch_size):
        return TranslatorOptions(backend="llm", model=spec.name_or_path, batch_size=batch_size,
                                 max_new_tokens_ratio=0.1, max_new_tokens_extra=4, **mode)

    units = [{"text": t, "tokens": n} for t, n in zip(TEXTS, model.token_lengths(TEXTS, "en", "fr"))]
    together = candidates(model, units, options(4))
    runs = {"alone": {u["text"]: candidates(model, [u], options(4))[u["text"]] for u in units},
            "batch_size_2": candidates(model, units, options(2)),
            "shards_halves": {**candidates(model, units[::2], options(4)), **candidates(model, units[1::2], options(4))},
            "shards_thirds": {k: v for part in (units[:4], units[4:8], units[8:])
                              for k, v in candidates(model, part, options(4)).items()}}
    texts = {name: sum([c.text for c in run[t]] != [c.text for c in together[t]] for t in together)
             for name, run in runs.items()}
    drift = max(abs(a.sequence_score - b.sequence_score) for run in runs.values() for t in together
                for a, b in zip(run[t], together[t]))
    distinct = sum(len({c.text for c in cs}) for cs in together.values())
    return {"texts_changed": texts, "score_drift": drift, "distinct_texts": distinct,
            "candidates": sum(map(len, together.values()))}


def stock_sampling_control(model) -> int:
    """transformers' own sampling: a unit's samples alone and beside batch mates of its length, the global seed
    set the same way before each: how many units' samples change."""
    import torch

    lengths = model.token_lengths(TEXTS, "en", "fr")
    length = max(set(lengths), key=lengths.count)
    same = [t for t, n in zip(TEXTS, lengths) if n == length][:4]

    def sample(texts):
        torch.manual_seed(0)
        batch = model.prepare(texts, "en", "fr")
        out = model.model.generate(**batch.inputs, do_sample=True, temperature=0.8, top_k=0, num_return_sequences=3,
                                   max_new_tokens=8, pad_token_id=model.pad_id, eos_token_id=model.stop_ids)
        rows = out[:, batch.inputs["input_ids"].shape[1]:].tolist()
        return [rows[i * 3:(i + 1) * 3] for i in range(len(texts))]

    together = sample(same)
    return sum(sample([t])[0] != together[i] for i, t in enumerate(same))


def differences() -> dict:
    from xmdata.models.llm import LlmTranslator
    from xmdata.models.tiny import cached_tiny_models

    spec = cached_tiny_models(seed=0)["llm"]
    model = LlmTranslator(spec)
    model.load()
    return {**{name: plans(model, spec, mode) for name, mode in MODES.items()},
            "control_stock_sampling_changed": stock_sampling_control(model)}


if __name__ == "__main__":
    print(json.dumps(differences()))
