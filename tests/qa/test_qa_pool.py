"""A pool of translators in translate-qa (tasks/translation/pool.py, the translation pool's code): the
tiny M2M100 and NLLB-200 on the sample MMEB rows, every engine's candidates in qa_candidates.parquet
with an `engine` column and the project's codes, selection across engines, a target one engine cannot
produce left to the other, memo units per engine, and the refusals in one line before any model loads."""
from __future__ import annotations

import json

import polars as pl
import pytest

from xmdata.data import sample_path
from xmdata.runtime import memo
from xmdata.runtime.session import execution_session
from xmdata.tasks.translation.params import TranslateQaParams
from xmdata.tasks.translation.pool import engine_runs

GENERATION = dict(num_beams=2, num_candidates=2, max_new_tokens_ratio=1.0, max_new_tokens_extra=4)
# The untrained tiny translators write script salad: accepted, so that candidates reach COMETKiwi.
LID_ACCEPT = {"fr": ["fr", "as", "ru", "new"], "te": ["te", "as", "ru", "new"]}


def pool(tiny_models, *backends, targets=("fr", "te"), scored=True) -> TranslateQaParams:
    filters = {"qe_model": tiny_models["cometkiwi"].name_or_path, "lid_accept": LID_ACCEPT, "min_lid_prob": 0.0}
    return TranslateQaParams(targets=list(targets), per_task=1, filters=filters if scored else None, translator=[
        {**GENERATION, "backend": b, "model": tiny_models[b].name_or_path} for b in backends])


def build(params, out, location=None):
    from xmdata.flows.translate_qa import translate_qa_rows

    with execution_session("inprocess"), memo.using(memo.MemoOptions(location)):
        reports, _, report = translate_qa_rows(sample_path("mmeb.jsonl"), str(out), 2, params)
    return {r.stage: r for r in reports}, report


def labels_of(tiny_models):
    return [f"{b}:{b}" for b in ("m2m100", "nllb")]  # local folders by their name, not where they are


def test_a_qa_pool_scores_every_engine_and_chooses_across_them(tiny_models, tmp_path):
    params = pool(tiny_models, "m2m100", "nllb")
    m2m100, nllb = engine_runs(params)
    assert m2m100.left == ("te",) and nllb.params.targets == ["fra_Latn", "tel_Telu"]
    assert nllb.params.translator.num_beams == 2 and nllb.params.per_task == 1  # the pool's settings, each engine
    stages, report = build(params, tmp_path / "pool")
    assert {f"{m2m100.folder}/translate_qa", f"{nllb.folder}/qa_candidate_qe"} <= set(stages)
    candidates = pl.read_parquet(tmp_path / "pool" / "qa_candidates.parquet")
    labels = labels_of(tiny_models)
    assert candidates.columns.index("engine") == 7  # after the part's fields, as translate's
    assert set(candidates["target_language"]) == {"fr", "te"}  # the project's codes, whatever the engine
    made = candidates.group_by("target_language").agg(pl.col("engine").unique().sort())
    assert dict(made.iter_rows()) == {"fr": sorted(labels), "te": [labels[1]]}
    # An instance's candidates: the engine listed first, then its beams.
    one = candidates.filter((pl.col("id") == candidates["id"][0]) & (pl.col("target_language") == "fr"))
    assert one["engine"].to_list() == sorted(one["engine"].to_list(), key=labels.index)
    # The untrained tiny models write no label words, so every instance is refused with its reason (the
    # choice across engines is tested on rows below); each instance x target is counted once, not per engine.
    counts = pl.read_parquet(tmp_path / "pool" / "qa_counts.parquet")
    instances = candidates.select("id").n_unique()
    assert counts["instances"].sum() == 2 * instances
    run = json.loads((tmp_path / "pool" / "translate_qa.json").read_text())
    assert [e["left_to_others"] for e in run["engines"]] == [["te"], []]
    assert set(json.loads((tmp_path / "pool" / "qa_labels.json").read_text())["labels"]) == {"fr", "te"}
    assert report["counts"] and set(report["kept_per_target"]) == {"fr", "te"}
    assert report["chosen_per_engine"] == {t: dict.fromkeys(labels, 0) for t in ("fr", "te")}  # none kept
    # explain: the translate_qa step's shard record of each engine, from its folder; every candidate's engine.
    from xmdata.tasks.explain.explain import explain
    from xmdata.tasks.explain.text import explanation_text

    instance = candidates["id"][0]
    explanation = explain(str(tmp_path / "pool"), instance)
    step = next(s for s in explanation.traces[0].steps if s.stage == "translate_qa")
    assert set(step.record) == set(labels) and all(r["params_hash"] for r in step.record.values())
    assert f"record ({labels[0]}): " in explanation_text(explanation)
    fr = next(s for s in explanation.traces[0].steps if s.stage == "select_qa -> fr")
    assert {c["engine"] for c in fr.candidates} == set(labels)


def test_ties_go_to_the_engine_listed_first_then_the_rank():
    from xmdata.tasks.qa.outputs import select_candidates

    rows = [dict(id="a", task="t", part=part, target_language="fr", status="ok", candidate=f"{engine}{rank}",
                 engine=engine, beam_rank=rank, lid_match=True, lid_prob=0.9, qe_score=qe)
            for engine, rank, qe in [("b:2", 0, 0.5), ("a:1", 1, 0.5 - 1e-7), ("a:1", 0, 0.2)]
            for part in ("query", "positive")]
    from xmdata.tasks.translation.select import with_engine_rank

    frame = pl.DataFrame(rows)
    kept, _ = select_candidates(with_engine_rank(frame, ["a:1", "b:2"]), True, 0.5, None)
    assert set(kept["candidate"]) == {"a:11"}
    kept, _ = select_candidates(with_engine_rank(frame, ["b:2", "a:1"]), True, 0.5, None)
    assert set(kept["candidate"]) == {"b:20"}
    better = frame.with_columns(qe_score=pl.when(pl.col("candidate") == "a:10").then(0.9).otherwise(pl.col("qe_score")))
    kept, _ = select_candidates(with_engine_rank(better, ["b:2", "a:1"]), True, 0.5, None)
    assert set(kept["candidate"]) == {"a:10"}  # the best QE, whatever engine wrote it
    kept, _ = select_candidates(with_engine_rank(frame, ["b:2", "a:1"]), False, 0.5, None)
    assert set(kept["candidate"]) == {"b:20"}  # unscored: the first engine's best rank


def test_the_qa_report_counts_the_instances_each_engine_won(tmp_path):
    import pyarrow as pa

    from xmdata.schemas.translation import QA_ENGINE_CANDIDATES
    from xmdata.tasks.qa.outputs import write_qa_outputs

    params = TranslateQaParams(targets=["fr"], filters={}, translator=[{"backend": "m2m100"}, {"backend": "nllb"}])
    first, second = (engine.engine_label() for engine in params.engines)
    rows = [dict(id=i, task="t", part=part, source_text="x", target_language="fr", image=None, status="ok",
                 candidate=f"{i} {engine}", engine=engine, beam_rank=0, lid_label="fr", lid_prob=0.9, lid_match=True,
                 qe_score=qe)
            for i, wins in (("a", first), ("b", second), ("c", second)) for engine in (first, second)
            for qe in [0.8 if engine == wins else 0.1] for part in ("query", "positive")]
    table = pa.Table.from_pylist(rows, schema=QA_ENGINE_CANDIDATES.schema)
    report = write_qa_outputs(str(tmp_path), [table], params, {}, {})
    assert report["chosen_per_engine"] == {"fr": {first: 1, second: 2}}
    kept = pl.read_parquet(tmp_path / "qa_parallel.parquet")
    assert dict(zip(kept["id"], kept["target_text"])) == {"a": f"a {first}", "b": f"b {second}", "c": f"c {second}"}


def test_adding_an_engine_computes_its_work_only_and_removing_one_computes_nothing(tiny_models, tmp_path):
    location = str(tmp_path / "memo")
    build(pool(tiny_models, "m2m100", targets=("fr",), scored=False), tmp_path / "out", location)
    params = pool(tiny_models, "m2m100", "nllb", targets=("fr",), scored=False)
    stages, _ = build(params, tmp_path / "out", location)
    m2m100, nllb = engine_runs(params)
    assert stages[f"{m2m100.folder}/translate_qa"].shards_run == 0
    assert stages[f"{nllb.folder}/translate_qa"].shards_run == 2
    stages, _ = build(pool(tiny_models, "nllb", targets=("fr",), scored=False), tmp_path / "out", location)
    assert all(r.shards_run == 0 for r in stages.values())


def test_a_one_engine_run_keeps_its_codes_and_its_files(tiny_models, tmp_path):
    params = TranslateQaParams(targets=["fr"], per_task=1, translator={"model": tiny_models["madlad"].name_or_path})
    assert not params.is_pool and params.translator.num_beams == 1  # the method's plain generation
    build(params, tmp_path / "one")
    candidates = pl.read_parquet(tmp_path / "one" / "qa_candidates.parquet")
    assert set(candidates["engine"]) == {"madlad:madlad"}
    assert not (tmp_path / "one" / "engines").exists()


BAD = {
    "a target no engine covers": (["--translator", "backend=m2m100,model={m2m100}", "--targets", "fr,te"],
                                  "no translator of the pool covers te"),
    "the same engine twice": (["--translator", "backend=nllb", "--translator", "backend=nllb"], "more than once"),
    "backend codes in a pool": (["--translator", "backend=nllb,model={nllb}", "--targets", "fra_Latn"],
                                "takes the project's language codes"),
    "split sentences in a pool": (["--translator", "backend=nllb,model={nllb},split_sentences=true"],
                                  "translator.0.split_sentences"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_qa_pools_are_refused_in_one_line_before_any_model_loads(case, tiny_models, tmp_path, capsys):
    from support.pool_refusals import assert_refused_in_one_line

    assert_refused_in_one_line("translate-qa", sample_path("mmeb.jsonl"), *BAD[case], tiny_models, tmp_path / "out",
                               capsys)
