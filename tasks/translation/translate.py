"""Translate stage: every unit of a shard gets up to num_candidates beam candidates per target (an llm's:
beams or samples, its raw replies cleaned and screened by tasks/translation/llm_replies.py, every
refused reply a reject with its reason, the unit's row its best-ranked reply's reason when none is kept).

Score first, select second: nothing is chosen here. A unit that cannot be translated (empty, or
longer than the model takes) keeps one placeholder row per target with its reason as `status`,
and goes to the rejects table once, so selection can account for every input value. What becomes
a reject and what fails the shard: beam_search.py.
"""
from __future__ import annotations

import pyarrow as pa
from pydantic import model_serializer

from xmdata.tasks.translation.params import TranslateParams
from xmdata.models.base import ModelSpec
from xmdata.models.oom_backoff import FAILED, OUT_OF_MEMORY, BatchSizes, report
from xmdata.models.registry import get_model
from xmdata.runtime.params import Params
from xmdata.runtime.placement import needs_gpu
from xmdata.runtime.stage import Stage
from xmdata.schemas.translation import CANDIDATES
from xmdata.tasks.build.rejects import concat_rejects, make_rejects
from xmdata.tasks.build.unit_memo import memo_for
from xmdata.tasks.translation.beam_search import beam_search, recorded
from xmdata.tasks.translation.input import explode_units, split_sentences
from xmdata.tasks.translation.llm_options import LLM
from xmdata.tasks.translation.llm_replies import RULES_VERSION, screen

STAGE = "translate"
MEMO_KIND = "beam_candidates"
# What a shard's params hold that does not decide one unit's candidates (the memo's key leaves them
# out; tests/translation/test_memo.py proves each): the unit's own target, text and model content
# are in its key instead, and how the texts were cut into units decides the units, not their results.
# An llm's reply rules run on every build over the raw replies the memo keeps (llm_replies.py).
MEMO_EXCLUDE = ("target_languages", "columns", "split_sentences", "translator.name_or_path", "reply_rules")


class TranslateShard(Params):
    """What a shard runs with: the stage's params and its translator resolved (TranslatorOptions.spec)."""
    params: TranslateParams
    translator: ModelSpec

    @model_serializer
    def _record(self) -> dict:
        return {**recorded(self.translator, self.params), "columns": self.params.columns,
                "split_sentences": self.params.translator.split_sentences,
                **({"reply_rules": RULES_VERSION} if self.translator.backend == LLM else {})}


def segment_units(units: pa.Table, translator, params: TranslateParams) -> tuple[list[dict], list[dict]]:
    """(units ready to translate, refused units), each a dict; long texts split when asked."""
    refused, split = [], []
    for unit in units.to_pylist():
        text = (unit["source_text"] or "").strip()
        if not text:
            refused.append({**unit, "segment": 0, "status": "empty_text"})
        else:
            split.append((unit, split_sentences(text) if params.translator.split_sentences else [text]))
    # One tokenizer call for the whole shard, not one per unit.
    lengths = iter(translator.token_lengths([piece for _, pieces in split for piece in pieces],
                                            params.source, params.targets[0]))
    ready = []
    for unit, pieces in split:
        counts = [next(lengths) for _ in pieces]
        if max(counts) > translator.max_input_tokens:
            refused.append({**unit, "segment": 0, "status": "too_long"})
            continue
        ready += [{**unit, "segment": i, "source_text": piece, "tokens": n}
                  for i, (piece, n) in enumerate(zip(pieces, counts))]
    return ready, refused


def translate_candidates(table: pa.Table, shard: TranslateShard) -> tuple[pa.Table, pa.Table]:
    translator, params = get_model("translator", shard.translator), shard.params
    ready, refused = segment_units(explode_units(table, params.columns), translator, params)
    rows, empty, sizes = [], [], BatchSizes()
    memo = memo_for(MEMO_KIND, shard.translator)
    llm = shard.translator.backend == LLM
    for target in params.targets:
        rows += [{**unit, "target_language": target} for unit in refused]
        for unit, candidates in beam_search(translator, ready, lambda u: u["source_text"], params.source, target,
                                            params.translator, sizes, memo):
            first_reason = None
            if llm and candidates is not FAILED:  # raw replies: cleaned, and each refused with its reason
                candidates, replies_refused = screen(candidates, unit["source_text"])
                empty += [{**unit, "status": reason, "reply": f" -> {target}: reply {reply.rank}: {reply.text!r}"}
                          for reply, reason in replies_refused]
                first_reason = replies_refused[0][1] if replies_refused and not candidates else None
            if first_reason:  # no reply was a translation: the best-ranked one's reason speaks for the unit
                rows.append({**unit, "target_language": target, "status": first_reason})
                continue
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
                     [describe(u) + u.get("reply", "") + (f" ({sizes.summary()})" if reason == OUT_OF_MEMORY else "")
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


def translate_stage(params: TranslateParams, translator: ModelSpec) -> Stage:
    """`translator`: params.translator resolved (TranslatorOptions.spec), once by the flow."""
    # 2: batches of one input length (a unit's candidates no longer depend on the rows beside it; the
    # out-of-memory backoff needed no new version: a shard that finished before it had no OOM).
    return Stage(STAGE, version="2", fn=translate_candidates, memo_exclude=MEMO_EXCLUDE, memo_kinds=(MEMO_KIND,), memo_gather=True,
                 params=TranslateShard(params=params, translator=translator), gpu=needs_gpu(translator.device))
