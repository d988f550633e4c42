"""The translate_qa shard stage: pack each instance, translate the packed texts in token-budget
batches, extract every candidate's parts. Score first, select second: every candidate keeps a row
per part (query, positive) with `status` "ok" or its extraction reason; choosing is qa_outputs'.

What becomes a reject and what fails the shard is the text path's rule (tasks/translation/beam_search.py):
an instance that cannot be packed, is too long, gives no candidate or runs out of memory alone is
rejected with its reason; any other error of the translator fails the shard.
"""
from __future__ import annotations

import pyarrow as pa
from pydantic import model_serializer

from xmdata.tasks.translation.params import TranslateQaParams
from xmdata.models.base import ModelSpec
from xmdata.models.oom_backoff import FAILED, OUT_OF_MEMORY, BatchSizes, report
from xmdata.models.registry import get_model
from xmdata.runtime.params import Params
from xmdata.runtime.placement import needs_gpu
from xmdata.runtime.stage import Stage
from xmdata.schemas.translation import QA_CANDIDATES
from xmdata.tasks.build.rejects import concat_rejects, make_rejects
from xmdata.tasks.build.unit_memo import memo_for
from xmdata.tasks.qa.extract import LabelPattern, extract
from xmdata.tasks.qa.labels import ENGLISH, with_english
from xmdata.tasks.qa.pack import PackError, pack
from xmdata.tasks.translation.beam_search import beam_search, recorded
from xmdata.tasks.translation.llm_options import LLM
from xmdata.tasks.translation.llm_replies import RULES_VERSION, judge

STAGE = "translate_qa"
MEMO_KIND = "beam_candidates"
# Left out of a unit's memo key (tests/qa/test_qa_memo.py): its target and model content are in the key,
# and the label words decide the extraction, which runs on every build, not the raw candidates.
MEMO_EXCLUDE = ("target_languages", "labels", "translator.name_or_path", "reply_rules")
KEPT_PARTS = ("query", "positive")  # the negative gives context and is then dropped, as in the method


class QaTranslateShard(Params):
    """What a shard runs with: the stage's params, its translator resolved, and each target's label words."""
    params: TranslateQaParams
    translator: ModelSpec
    labels: dict[str, dict[str, list[str]]]  # target -> its question and answer label words

    @model_serializer
    def _record(self) -> dict:
        return {**recorded(self.translator, self.params), "labels": self.labels,
                **({"reply_rules": RULES_VERSION} if self.translator.backend == LLM else {})}


def pack_instances(table: pa.Table, translator, params: TranslateQaParams) -> tuple[list[dict], list[dict]]:
    """(packable instances with their Packed and token length, refused ones with a reason)."""
    ready, refused = [], []
    rows = table.to_pylist()
    for row in rows:
        try:
            row["packed"] = pack(row["query"], row["positive"], row.get("negative"))
        except PackError as exc:
            refused.append({**row, "status": exc.args[0]})
            continue
        ready.append(row)
    texts = [r["packed"].text for r in ready]
    lengths = translator.token_lengths(texts, params.source, params.targets[0]) if texts else []
    for row, n in zip(ready, lengths):
        row["tokens"] = n
    too_long = [r for r in ready if r["tokens"] > translator.max_input_tokens]
    refused += [{**r, "status": "too_long"} for r in too_long]
    return [r for r in ready if r["tokens"] <= translator.max_input_tokens], refused


def part_rows(row: dict, target: str, status: str, parts: list[str] | None = None, **candidate) -> list[dict]:
    memories = row["packed"].parts if "packed" in row else (None, None)
    return [{"id": row["id"], "task": row["task"], "part": name, "source_text": row[name], "image": row["image"],
             "target_language": target, "status": status, "candidate": parts[i] if parts else None,
             "flattened_newlines": memories[i].flattened_newlines if memories[i] else None, **candidate}
            for i, name in enumerate(KEPT_PARTS)]


def translate_instances(table: pa.Table, shard: QaTranslateShard) -> tuple[pa.Table, pa.Table]:
    translator, params = get_model("translator", shard.translator), shard.params
    ready, refused = pack_instances(table, translator, params)
    english = LabelPattern.build(ENGLISH)
    rows, rejects, sizes = [], [], BatchSizes()
    memo = memo_for(MEMO_KIND, shard.translator)  # the raw candidates: extraction runs on every build
    for target in params.targets:
        pattern = LabelPattern.build(with_english(shard.labels[target]))
        for row in refused:
            rows += part_rows(row, target, row["status"])
            rejects.append(make_rejects(STAGE, row["status"], [row["id"]], [f"-> {target}: {row['query']!r}"]))
        for unit, candidates in beam_search(translator, ready, lambda u: u["packed"].text, params.source, target,
                                            params.translator, sizes, memo):
            if candidates is FAILED:
                rows += part_rows(unit, target, OUT_OF_MEMORY)
                rejects.append(make_rejects(STAGE, OUT_OF_MEMORY, [unit["id"]], [f"-> {target}: {sizes.summary()}"]))
                continue
            rows += candidate_rows(unit, target, candidates, pattern, english, rejects)
    report(STAGE, sizes)
    return candidates_table(rows), concat_rejects(rejects)


def candidate_rows(unit: dict, target: str, candidates: list, pattern, english, rejects: list) -> list[dict]:
    """Rows for every candidate; the instance goes to rejects when none of them extracts."""
    if not candidates:
        rejects.append(make_rejects(STAGE, "empty_output", [unit["id"]], [f"-> {target}"]))
        return part_rows(unit, target, "empty_output")
    sources = [unit["query"], unit["positive"]] + ([unit["negative"]] if len(unit["packed"].parts) > 2 else [])
    rows, reasons = [], []
    for c in candidates:
        text, reason = c.text, None
        if getattr(c, "truncated", None) is not None:  # an llm's raw reply: cleaned and screened first
            verdict = judge(c.text, c.truncated, unit["packed"].text)
            text, reason = verdict.text, verdict.reason
        parts, reason = (None, reason) if reason else extract(text, unit["packed"], sources, pattern, english)
        reasons.append(reason)
        rows += part_rows(unit, target, reason or "ok", parts, beam_rank=c.rank,
                          sequence_score=c.sequence_score, output=c.text)
    if all(reasons):  # the best-ranked candidate's reason speaks for the instance
        rejects.append(make_rejects(STAGE, reasons[0], [unit["id"]], [f"-> {target}: {candidates[0].text!r}"]))
    return rows


def candidates_table(rows: list[dict]) -> pa.Table:
    rows.sort(key=lambda r: (r["id"], r["target_language"], r.get("beam_rank") or 0, KEPT_PARTS.index(r["part"])))
    schema = QA_CANDIDATES.schema
    return pa.table({f.name: pa.array([r.get(f.name) for r in rows], f.type) for f in schema}, schema=schema)


def translate_qa_stage(params: TranslateQaParams, translator: ModelSpec, labels: dict) -> Stage:
    """`translator`: params.translator resolved (TranslatorOptions.spec), once by the flow."""
    labels = {t: {k: labels[t][k] for k in ("question", "answer")} for t in params.targets}
    # 2: batches of one input length (a unit's candidates no longer depend on the rows beside it)
    return Stage(STAGE, version="2", fn=translate_instances, gpu=needs_gpu(translator.device), memo_exclude=MEMO_EXCLUDE, memo_kinds=(MEMO_KIND,), memo_gather=True,
                 params=QaTranslateShard(params=params, translator=translator, labels=labels))
