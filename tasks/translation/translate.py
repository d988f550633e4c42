"""Translate stage: every unit of a shard gets up to num_candidates beam candidates per target.

Score first, select second: nothing is chosen here. A unit that cannot be translated (empty, or
longer than the model takes) keeps one placeholder row per target with its reason as `status`,
and goes to the rejects table once, so selection can account for every input value.
"""
from __future__ import annotations

import pyarrow as pa

from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
from xmdata.runtime.params import Params
from xmdata.runtime.placement import needs_gpu
from xmdata.runtime.stage import Stage
from xmdata.schemas.translation import CANDIDATES

from xmdata.models.oom_backoff import FAILED, OUT_OF_MEMORY, BatchSizes, report, run_with_backoff
from xmdata.tasks.build.rejects import concat_rejects, make_rejects
from xmdata.tasks.build.token_batches import length_sorted_batches, max_new_tokens
from xmdata.tasks.translation.input import explode_units, split_sentences

STAGE = "translate"


class BeamSearchShard(Params):
    """What a shard's beam search runs with, texts or packed Q/A alike (hashed into its record; key
    order does not matter); the values are TranslatorOptions'."""
    translator: ModelSpec
    source_language: str
    target_languages: list[str]
    num_beams: int
    num_candidates: int
    batch_tokens: int
    max_new_tokens_ratio: float
    max_new_tokens_extra: int


class TranslateShard(BeamSearchShard):
    columns: list[str]
    split_sentences: bool


def segment_units(units: pa.Table, translator, params: TranslateShard) -> tuple[list[dict], list[dict]]:
    """(units ready to translate, refused units), each a dict; long texts split when asked."""
    refused, split = [], []
    for unit in units.to_pylist():
        text = (unit["source_text"] or "").strip()
        if not text:
            refused.append({**unit, "segment": 0, "status": "empty_text"})
        else:
            split.append((unit, split_sentences(text) if params.split_sentences else [text]))
    # One tokenizer call for the whole shard, not one per unit.
    lengths = iter(translator.token_lengths([piece for _, pieces in split for piece in pieces],
                                            params.source_language, params.target_languages[0]))
    ready = []
    for unit, pieces in split:
        counts = [next(lengths) for _ in pieces]
        if max(counts) > translator.max_input_tokens:
            refused.append({**unit, "segment": 0, "status": "too_long"})
            continue
        ready += [{**unit, "segment": i, "source_text": piece, "tokens": n}
                  for i, (piece, n) in enumerate(zip(pieces, counts))]
    return ready, refused


def translate_candidates(table: pa.Table, params: TranslateShard) -> tuple[pa.Table, pa.Table]:
    translator = get_model("translator", params.translator)
    ready, refused = segment_units(explode_units(table, params.columns), translator, params)
    rows, empty, sizes = [], [], BatchSizes()
    for target in params.target_languages:
        rows += [{**unit, "target_language": target} for unit in refused]
        for batch in length_sorted_batches([u["tokens"] for u in ready], params.batch_tokens,
                                           params.num_beams):
            units = [ready[i] for i in sorted(batch)]  # input order inside a batch: stable output
            limit = max_new_tokens(max(u["tokens"] for u in units), params.max_new_tokens_ratio,
                                   params.max_new_tokens_extra, translator.max_input_tokens)
            # One limit for the whole batch, halves included: a retried unit gets what it would have.
            results = run_with_backoff(units, lambda part: translator.predict(
                translator.prepare([u["source_text"] for u in part], params.source_language, target),
                params.num_beams, params.num_candidates, limit), sizes)
            for unit, candidates in zip(units, results):
                if candidates is FAILED or not candidates:  # say why rather than lose the unit
                    status = OUT_OF_MEMORY if candidates is FAILED else "empty_output"
                    rows.append({**unit, "target_language": target, "status": status})
                    empty.append({**unit, "status": status})
                    continue
                rows += [{**unit, "target_language": target, "status": "ok", "candidate": c.text,
                          "beam_rank": c.rank, "sequence_score": c.sequence_score} for c in candidates]
    report(STAGE, sizes)
    # Refused units are rejected once; an empty output (or out of memory) once per target that gave it.
    failed = refused + empty
    rejects = concat_rejects([
        make_rejects(STAGE, reason, [u["id"] for u in failed if u["status"] == reason],
                     [describe(u) + (f" ({sizes.summary()})" if reason == OUT_OF_MEMORY else "")
                      for u in failed if u["status"] == reason])
        for reason in dict.fromkeys(u["status"] for u in failed)])
    return candidates_table(rows), rejects


def describe(unit: dict) -> str:
    where = unit["column"] if unit["element"] is None else f"{unit['column']}[{unit['element']}]"
    return f"{where}: {unit['source_text']!r}"


def candidates_table(rows: list[dict]) -> pa.Table:
    """Rows in a fixed order (unit, target, rank) and the contract's columns; LID/QE still null."""
    rows.sort(key=lambda r: (r["id"], r["column"], -1 if r["element"] is None else r["element"],
                             r["segment"], r["target_language"], r.get("beam_rank") or 0))
    schema = CANDIDATES.schema
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in schema}, schema=schema)


def translate_stage(translator: ModelSpec, columns: list[str], source_language: str,
                    target_languages: list[str], **generation) -> Stage:
    # Still version 1: a shard that finished before out-of-memory backoff existed had no OOM to back off from.
    return Stage(STAGE, version="1", fn=translate_candidates, params=TranslateShard(
        translator=translator, columns=columns, source_language=source_language,
        target_languages=target_languages, **generation),
        gpu=needs_gpu(translator.device))
