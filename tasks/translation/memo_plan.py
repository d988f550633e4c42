"""`xmdata translate --dry-run`: how many beam searches a build would run, and how many of them the memo
of model work already holds — read from the memo's index alone, before any model loads or any GPU
hour is spent. The counts are of distinct model inputs per target; an input longer than the model
takes is counted here and refused (too_long) by the build before the model, so `to compute` is an
upper bound. COMETKiwi is planned by the build itself: its pairs are the candidates not made yet. A
pool's rows are per target and engine, with each engine's total."""
from __future__ import annotations

import pyarrow as pa

from xmdata.runtime import memo
from xmdata.tasks.build.unit_memo import memo_for
from xmdata.tasks.translation.input import explode_units, read_translation_input, split_sentences
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.pool import engine_runs
from xmdata.tasks.translation.translate import MEMO_KIND, translate_stage


def memo_plan(source: str | pa.Table, params: TranslateParams, options: memo.MemoOptions) -> dict:
    table, _ = read_translation_input(source, params.columns)
    units = [text for unit in explode_units(table, params.columns).column("source_text").to_pylist()
             if (text := (unit or "").strip())]
    plan = {"location": options.location, "targets": {}, "engines": {}}
    for run in engine_runs(params):  # a pool: each engine its own units, in its own codes
        split = run.params.translator.split_sentences
        texts = list(dict.fromkeys(piece for text in units for piece in (split_sentences(text) if split else [text])))
        plan.setdefault("distinct_texts", len(texts))
        stage = translate_stage(run.params, run.params.translator.spec())
        with memo.shard_scope(options, stage.code_version, stage.memo_params):
            unit_memo = memo_for(MEMO_KIND, stage.params.translator)
            for target in run.params.targets:
                inputs = [[text, run.params.source, target] for text in texts]
                held = sum(unit_memo.holds(inputs)) if unit_memo is not None else 0
                row = f"{run.to_project[target]} · {run.label}" if params.is_pool else target
                plan["targets"][row] = {"units": len(inputs), "in_memo": held, "to_compute": len(inputs) - held}
                engine = plan["engines"].setdefault(run.label, {"units": 0, "in_memo": 0, "to_compute": 0})
                for key, value in plan["targets"][row].items():
                    engine[key] += value
    return plan


def plan_text(plan: dict) -> str:
    text = memo.dry_run_text(plan["location"], ("target", "beam searches"), plan["targets"],
                             "beam search(es) to run (texts longer than the model takes are refused before it)")
    if len(plan["engines"]) > 1:  # a pool: each engine's total
        text += "\n" + "\n".join(f"{engine}: {n['units']:,} units, {n['in_memo']:,} in the memo, "
                                  f"{n['to_compute']:,} to compute" for engine, n in plan["engines"].items())
    return text
