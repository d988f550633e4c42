"""`xmdata translate --dry-run`: how many beam searches a build would run, and how many of them the memo
of model work already holds — read from the memo's index alone, before any model loads or any GPU
hour is spent. The counts are of distinct model inputs per target; an input longer than the model
takes is counted here and refused (too_long) by the build before the model, so `to compute` is an
upper bound. COMETKiwi is planned by the build itself: its pairs are the candidates not made yet."""
from __future__ import annotations

import pyarrow as pa

from xmdata.runtime import memo
from xmdata.tasks.build.unit_memo import memo_for
from xmdata.tasks.translation.input import explode_units, read_translation_input, split_sentences
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import MEMO_KIND, translate_stage


def memo_plan(source: str | pa.Table, params: TranslateParams, options: memo.MemoOptions) -> dict:
    table, _ = read_translation_input(source, params.columns)
    texts = []
    for unit in explode_units(table, params.columns).column("source_text").to_pylist():
        text = (unit or "").strip()
        if text:
            texts += split_sentences(text) if params.translator.split_sentences else [text]
    texts = list(dict.fromkeys(texts))
    stage = translate_stage(params, params.translator.spec())
    plan = {"location": options.location, "distinct_texts": len(texts), "targets": {}}
    with memo.shard_scope(options, stage.code_version, stage.memo_params):
        unit_memo = memo_for(MEMO_KIND, stage.params.translator)
        for target in params.targets:
            inputs = [[text, params.source, target] for text in texts]
            held = sum(unit_memo.holds(inputs)) if unit_memo is not None else 0
            plan["targets"][target] = {"units": len(inputs), "in_memo": held, "to_compute": len(inputs) - held}
    return plan


def plan_text(plan: dict) -> str:
    return memo.dry_run_text(plan["location"], ("target", "beam searches"), plan["targets"],
                             "beam search(es) to run (texts longer than the model takes are refused before it)")
