"""Beam search over a shard's units, for texts and packed Q/A instances alike, and its one failure rule.

What the model cannot take or gives nothing for becomes a reject with the stage and its reason:
`empty_text`, `too_long` and the packing reasons (refused before the model), `empty_output` (no
candidate), `out_of_memory` (even alone, after the batch was halved). Anything else the translator
raises fails the shard, so that the executor retries it or names it among the failed shards: an
error nobody knows is never turned into rows.
"""
from __future__ import annotations

from dataclasses import asdict, astuple
from typing import Callable, Iterator

from xmdata.tasks.translation.options import TranslatorOptions
from xmdata.models.base import Candidate, ModelSpec
from xmdata.models.oom_backoff import BatchSizes, OutOfMemory, run_with_backoff
from xmdata.models.token_batches import batch_capacity, length_sorted_batches, max_new_tokens
from xmdata.runtime.memo import MISSING, UnitMemo


def recorded(translator: ModelSpec, params) -> dict:
    """What a beam-search shard's params hash covers: the resolved translator, the languages and the
    generation options (TranslatorOptions.beam_search; batch_size since the stages' version 2)."""
    return {"translator": asdict(translator), "source_language": params.source,
            "target_languages": params.targets, **params.translator.beam_search()}


def beam_search(translator, units: list[dict], text: Callable[[dict], str], source: str, target: str,
                options: TranslatorOptions, sizes: BatchSizes,
                memo: UnitMemo | None = None) -> Iterator[tuple[dict, list[Candidate] | OutOfMemory]]:
    """(unit, its candidates best first, or FAILED when it ran out of memory alone) for every unit,
    in batches of one length and one size (token_batches.py); each unit needs its `tokens` count.

    With a `memo` (tasks/build/unit_memo.py), a unit whose (text, source, target) it holds is served
    from it and only the others are searched, in batches of their own: a unit's candidates do not
    depend on its batch-mates, so the output is the same. Units come back in the order a search of
    them all would give (the callers' rejects follow it)."""
    lengths = [u["tokens"] for u in units]
    inputs = [[text(u), source, target] for u in units]
    held = memo.lookup(inputs) if memo is not None else [MISSING] * len(units)
    kind = getattr(translator, "candidate_type", Candidate)  # an llm's raw Reply also says if it was cut short
    results = {i: [kind(*c) for c in value] for i, value in enumerate(held) if value is not MISSING}
    missing = [i for i, value in enumerate(held) if value is MISSING]
    first = {}  # an input twice in the shard (one caption under two ids) is searched once
    for i in missing:
        first.setdefault(tuple(inputs[i]), i)
    todo = list(first.values())
    todo_lengths = [lengths[i] for i in todo]
    width = options.candidate_width()  # beams, or samples: the sequences a unit holds in one call
    for batch in length_sorted_batches(todo_lengths, options.batch_tokens, width, options.batch_size):
        part = [todo[i] for i in sorted(batch)]  # input order inside a batch: stable output
        length = lengths[part[0]]
        capacity = batch_capacity(length, options.batch_tokens, width, options.batch_size)
        # One limit for the length, halves included: a retried unit gets what it would have.
        limit = max_new_tokens(length, options.max_new_tokens_ratio, options.max_new_tokens_extra,
                               translator.max_input_tokens)
        ran_out_before = len(sizes.out_of_memory)
        found = run_with_backoff([units[i] for i in part], lambda some: generate(
            translator, [text(u) for u in some], source, target, options, limit), sizes, fill_to=capacity)
        if len(found) != len(part):  # a broken backend, not a bad row: fail the shard
            raise RuntimeError(f"translator returned {len(found)} results for {len(part)} inputs")
        results.update(zip(part, found))
        if memo is not None:
            memo.counts.computed += len(part)
            if len(sizes.out_of_memory) == ran_out_before:  # a halved batch's numbers are never stored
                memo.store([inputs[i] for i in part], [[astuple(c) for c in r] for r in found])
    for i in missing:
        results[i] = results[first[tuple(inputs[i])]]
    for batch in length_sorted_batches(lengths, options.batch_tokens, width, options.batch_size):
        for i in sorted(batch):
            yield units[i], results[i]


def generate(translator, texts: list[str], source: str, target: str, options: TranslatorOptions,
             limit: int) -> list[list[Candidate]]:
    """One call's candidates: beams, or (an llm with `sampling`) samples seeded by each unit's memo key,
    so that a unit's samples are its own whatever its batch (models/llm_sampling.py)."""
    if options.sampling is None:
        return translator.predict(translator.prepare(texts, source, target), options.num_beams,
                                  options.num_candidates, limit)
    keys = [UnitMemo.key([t, source, target]) for t in texts]
    return translator.sample(translator.prepare(texts, source, target, keys=keys), options.sampler(),
                             options.num_candidates, limit)
