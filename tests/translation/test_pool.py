"""A pool of translators (tasks/translation/pool.py): the tiny M2M100 and NLLB-200 built into one
candidates table, scored alike and chosen across; engines added or removed computing only their own
work; a target one engine cannot produce left to the other, counted; and the refusals of the issue,
each in one line before any model loads."""
from __future__ import annotations

import json

import polars as pl
import pyarrow as pa
import pytest

from xmdata.runtime import memo
from xmdata.runtime.session import execution_session
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.pool import engine_runs

GENERATION = dict(num_beams=4, num_candidates=2, batch_tokens=4096, max_new_tokens_ratio=1.0, max_new_tokens_extra=4)
TEXTS = [f"The dog {i} runs in the house." for i in range(6)] + ["A red cat sees the water.", ""]
# The untrained tiny translators write script salad (lid.176 reads M2M100's as Assamese, NLLB's as
# Russian): accepted here, so that both engines' candidates reach COMETKiwi and selection.
LID_ACCEPT = "fr=fr,as,ru,new;te=te,as,ru,new"
OUTPUTS = ["candidates.parquet", "translations.parquet", "translated.parquet", "translation_rejects.parquet",
           "translation_report.json"]


def table() -> pa.Table:
    return pa.table({"id": [f"r{i}" for i in range(len(TEXTS))], "text": TEXTS})


def pool(tiny_models, *backends, targets=("fr", "te"), **filters) -> TranslateParams:
    return TranslateParams(targets=list(targets), translator=[
        {**GENERATION, "backend": b, "model": tiny_models[b].name_or_path} for b in backends],
        filters={"qe_model": tiny_models["cometkiwi"].name_or_path, "lid_accept": LID_ACCEPT,
                 "min_lid_prob": 0.0, **filters})


def build(params, out, location=None, shards=2):
    from xmdata.flows.translate import translate_texts

    with execution_session("inprocess"), memo.using(memo.MemoOptions(location)):
        reports, _, selection = translate_texts(table(), str(out), shards, params)
    return {r.stage: r for r in reports}, selection


def test_a_pool_maps_project_codes_to_each_engine_and_leaves_what_one_cannot_produce(tiny_models):
    runs = engine_runs(pool(tiny_models, "m2m100", "nllb", targets=("fr", "te", "qu", "fil")))
    m2m100, nllb = runs
    assert m2m100.params.targets == ["fr", "tl"] and m2m100.left == ("te", "qu")  # M2M100 has no te, qu
    assert m2m100.to_project == {"fr": "fr", "tl": "fil"}
    assert nllb.params.targets == ["fra_Latn", "tel_Telu", "quy_Latn", "tgl_Latn"] and nllb.params.source == "eng_Latn"
    assert nllb.left == () and nllb.rank == 1 and m2m100.folder != nllb.folder
    # An engine's params are what a one-engine config in its own codes gives: the same params hash.
    from xmdata.tasks.translation.translate import translate_stage

    alone = TranslateParams(targets=["fr", "tl"], translator={**GENERATION, "model": tiny_models["m2m100"].name_or_path},
                            filters=m2m100.params.filters)
    assert (translate_stage(m2m100.params, m2m100.params.translator.spec()).params_hash
            == translate_stage(alone, alone.translator.spec()).params_hash)


def test_a_pooled_build_scores_every_engine_and_chooses_across_them(tiny_models, tmp_path):
    stages, selection = build(pool(tiny_models, "m2m100", "nllb"), tmp_path / "pool")
    candidates = pl.read_parquet(tmp_path / "pool" / "candidates.parquet")
    # A model in a local folder by the folder's name: the release must not depend on where a machine keeps it
    labels = ["m2m100:m2m100", "nllb:nllb"]
    assert candidates.columns[6] == "engine"
    assert set(candidates["target_language"]) == {"fr", "te"}  # the project's codes, whatever the engine
    made = candidates.filter(pl.col("status") == "ok").group_by("target_language").agg(pl.col("engine").unique().sort())
    assert dict(made.iter_rows()) == {"fr": sorted(labels), "te": [labels[1]]}
    assert candidates.filter(pl.col("status") == "ok")["lid_label"].null_count() == 0  # LID on every candidate
    assert candidates.filter(pl.col("lid_match"))["qe_score"].null_count() == 0  # and QE on every match
    # A unit's candidates: engine listed first, then beam rank.
    first = candidates.filter((pl.col("id") == "r0") & (pl.col("target_language") == "fr"))
    assert first["engine"].to_list() == sorted(first["engine"].to_list(), key=labels.index)
    report = selection["targets"]
    assert report["te"]["left_to_others"] == [labels[0]] and report["fr"]["left_to_others"] == []
    shares = report["fr"]["engines"]
    assert sum(s["chosen"] for s in shares.values()) == report["fr"]["rows_out"] > 0
    assert report["te"]["engines"][labels[1]]["chosen"] == report["te"]["rows_out"]
    markdown = (tmp_path / "pool" / "translation_report.md").read_text()
    assert f"{labels[0]} left 1 target(s) to the other engines: te" in markdown
    assert {s.split("/")[-1] for s in stages} >= {"translate", "candidate_lid", "candidate_qe"}
    # The chosen one is the best QE across engines (ties within tolerance: the engine listed first).
    chosen = pl.read_parquet(tmp_path / "pool" / "translations.parquet").filter(pl.col("status") == "ok")
    best = candidates.filter(pl.col("lid_match")).group_by("id", "target_language").agg(pl.col("qe_score").max())
    joined = chosen.join(best, on=["id", "target_language"], suffix="_best")
    assert (joined["qe_score_best"] - joined["qe_score"]).max() <= 1e-6

    # explain ROW names the chosen candidate's engine and the best of the other engine.
    from xmdata.tasks.explain.explain import explain

    from xmdata.tasks.explain.text import explanation_text

    explanation = explain(str(tmp_path / "pool"), "r0")
    text = explanation_text(explanation)  # as `xmdata explain` prints it: both engines' models named
    assert f"model: m2m100 {tiny_models['m2m100'].name_or_path}" in text and "best of each other engine=" in text
    trace = explanation.traces[0]
    fr = next(s for s in trace.steps if s.stage == "select_translations -> fr")
    te = next(s for s in trace.steps if s.stage == "select_translations -> te")
    if fr.outcome == "kept":
        assert fr.values["engine"] in labels
        other = next(label for label in labels if label != fr.values["engine"])
        assert set(fr.values["best of each other engine"]) == {other}
    assert te.values["best of each other engine"] == {labels[0]: "no candidate (the target was left to the other engines)"}
    assert all("engine" in c for c in fr.candidates) and any(c["verdict"].startswith("chosen") for c in fr.candidates)
    # The scoring steps: each engine's shard record and memo line, from its own folder (engines/<name>/).
    for stage in ("translate", "candidate_lid", "candidate_qe"):
        step = next(s for s in trace.steps if s.stage == stage)
        assert set(step.record) == set(labels) and all(r["params_hash"] for r in step.record.values()), stage
        assert f"record ({labels[1]}): " in text
    translate = next(s for s in trace.steps if s.stage == "translate")
    said = translate.values["model results"]
    assert set(said) == set(labels) and all("computed by this build (the memo was off)" in v for v in said.values())
    assert said[labels[1]].startswith("2 ")  # NLLB's two searches of r0's text: fr and te; M2M100's one: fr
    assert said[labels[0]].startswith("1 ")


def test_adding_an_engine_computes_its_work_only_and_removing_one_computes_nothing(tiny_models, tmp_path):
    location = str(tmp_path / "memo")
    build(pool(tiny_models, "m2m100", targets=("fr",)), tmp_path / "out", location)
    stages, _ = build(pool(tiny_models, "m2m100", "nllb", targets=("fr",)), tmp_path / "out", location)
    ran = {name: r.shards_run for name, r in stages.items()}
    m2m_folder, nllb_folder = (run.folder for run in engine_runs(pool(tiny_models, "m2m100", "nllb")))
    assert all(ran[f"{m2m_folder}/{s}"] == 0 for s in ("translate", "candidate_lid", "candidate_qe"))
    assert ran[f"{nllb_folder}/translate"] == 2
    qe = stages[f"{nllb_folder}/candidate_qe"].timing.get("memo", {}).get("cometkiwi", {})
    assert qe.get("served", 0) == 0  # its candidates are new pairs
    stages, _ = build(pool(tiny_models, "nllb", targets=("fr",)), tmp_path / "out", location)
    assert all(r.shards_run == 0 for name, r in stages.items() if name != "texts")


def test_memo_on_and_off_write_the_same_bytes(tiny_models, tmp_path):
    params = pool(tiny_models, "m2m100", "nllb")
    build(params, tmp_path / "off")
    build(params, tmp_path / "cold", str(tmp_path / "memo"))
    stages, _ = build(params, tmp_path / "warm", str(tmp_path / "memo"))  # every model result served
    assert all(r.timing.get("memo", {}).get(kind, {}).get("computed", 0) == 0 for r in stages.values()
               for kind in ("beam_candidates", "cometkiwi"))
    build(params, tmp_path / "replanned", str(tmp_path / "memo"), shards=3)
    for name in OUTPUTS:
        off = (tmp_path / "off" / name).read_bytes()
        assert (tmp_path / "cold" / name).read_bytes() == off, name
        assert (tmp_path / "warm" / name).read_bytes() == off, name
    for name in ("translations.parquet", "translated.parquet"):  # the shard plan decides no choice
        assert (tmp_path / "replanned" / name).read_bytes() == (tmp_path / "off" / name).read_bytes(), name


def test_selection_ties_go_to_the_engine_listed_first_then_the_beam_rank():
    from xmdata.tasks.translation.select import select_translations

    rows = [dict(id="a", column="text", element=None, segment=0, source_text="x", target_language="fr",
                 engine=engine, status="ok", candidate=text, beam_rank=rank, sequence_score=-1.0, lid_label="fr",
                 lid_prob=0.9, lid_label_raw="fr", lid_match=True, qe_score=qe)
            for engine, text, rank, qe in [("b:2", "from b", 0, 0.50), ("a:1", "from a", 1, 0.50 - 1e-7),
                                           ("a:1", "a's best", 0, 0.2)]]
    from xmdata.schemas.translation import TRANSLATION_CANDIDATES

    candidates = pa.Table.from_pylist(rows, schema=TRANSLATION_CANDIDATES.schema)
    assert select_translations(candidates, engines=["a:1", "b:2"])["text"].to_pylist() == ["from a"]
    assert select_translations(candidates, engines=["b:2", "a:1"])["text"].to_pylist() == ["from b"]


BAD = {
    "an unknown backend": (["--translator", "backend=vllm"], "backend"),
    "the same engine twice": (["--translator", "backend=nllb", "--translator", "backend=nllb"], "more than once"),
    "an empty engine": (["--translator", ""], "an empty engine"),
    "a target no engine covers": (["--translator", "backend=m2m100,model={m2m100}", "--targets", "fr,te"],
                                  "no translator of the pool covers te"),
    "mixed codes in one engine": (["--backend", "nllb", "--model", "{nllb}", "--targets", "fra_Latn,de"],
                                  "one translator takes its backend's codes"),
    "backend codes in a pool": (["--translator", "backend=nllb,model={nllb}", "--targets", "fra_Latn"],
                                "takes the project's language codes"),
}


def test_an_empty_pool_is_refused_by_every_door(tmp_path):
    from xmdata.flows.release_config import load_release_config
    from xmdata.schemas import ContractError

    with pytest.raises(ValueError, match="an empty list names no engine"):
        TranslateParams(targets=["fr"], translator=[])
    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "A dog."}\n', encoding="utf-8")
    config = tmp_path / "release.yaml"
    config.write_text("name: t\ntranslation:\n  input: in.jsonl\n  targets: [fr]\n  translator: []\n")
    with pytest.raises(ContractError, match="translation.translator: .*an empty list names no engine"):
        load_release_config(str(config))


@pytest.mark.parametrize("case", list(BAD))
def test_bad_pools_are_refused_in_one_line_before_any_model_loads(case, tiny_models, tmp_path, capsys):
    from support.pool_refusals import assert_refused_in_one_line

    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "text": "A dog."}\n', encoding="utf-8")
    assert_refused_in_one_line("translate", str(source), *BAD[case], tiny_models, tmp_path / "out", capsys)


def test_a_release_config_takes_a_pool_of_tiny_engines_and_refuses_what_none_covers(tmp_path):
    from xmdata.flows.release_preflight import checked_release
    from xmdata.schemas import ContractError

    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "A dog."}\n', encoding="utf-8")
    config = tmp_path / "release.yaml"
    body = ("name: t\ntranslation:\n  input: in.jsonl\n  targets: [{targets}]\n  translator:\n"
            "    - {{backend: m2m100, model: \"tiny:m2m100\", num_beams: 2, num_candidates: 1}}\n"
            "    - {{backend: nllb, model: \"tiny:nllb\", engine: ctranslate2}}\n")
    config.write_text(body.format(targets="fr, te, qu"), encoding="utf-8")
    release = checked_release(str(config), work=str(tmp_path / "work"))
    engines = release.resolved.translation.translator
    assert [e.backend for e in engines] == ["m2m100", "nllb"] and engines[1].spec().option("engine") == "ctranslate2"
    assert all(e.model.startswith("/") for e in engines)  # the tiny models' folders
    config.write_text(body.format(targets="fr, chr"), encoding="utf-8")  # Cherokee: in neither
    with pytest.raises(ContractError, match="no translator of the pool covers chr .*chr not in its tokenizer.*nllb.*no code"):
        checked_release(str(config), work=str(tmp_path / "work"))


def test_dry_run_counts_units_per_engine_and_loads_no_model(tiny_models, tmp_path):
    from xmdata.tasks.translation.memo_plan import memo_plan, plan_text

    params = pool(tiny_models, "m2m100", "nllb", targets=("fr",))
    location = str(tmp_path / "memo")
    build(pool(tiny_models, "m2m100", targets=("fr",)), tmp_path / "out", location)
    plan = memo_plan(table(), params, memo.MemoOptions(location))
    m2m100, nllb = (run.label for run in engine_runs(params))
    assert plan["engines"][m2m100] == {"units": 7, "in_memo": 7, "to_compute": 0}  # the blank: no unit
    assert plan["engines"][nllb] == {"units": 7, "in_memo": 0, "to_compute": 7}
    text = plan_text(plan)
    assert f"fr · {nllb}" in text and f"{nllb}: 7 units, 0 in the memo, 7 to compute" in text


def test_the_flows_form_offers_one_translator_or_a_list_of_translator_forms():
    """The UI form is the flow's signature: `translator` is TranslatorOptions or a list of them."""
    from prefect.utilities.callables import parameter_schema

    from xmdata.flows.translate import translate_flow

    schema = parameter_schema(translate_flow.fn).model_dump()
    definitions = schema["definitions"]
    translator = definitions["TranslateParams"]["properties"]["translator"]
    one, many = translator["anyOf"]
    assert one["$ref"].endswith("/TranslatorOptions") and many["type"] == "array"
    assert many["items"]["$ref"].endswith("/TranslatorOptions")
    assert "nllb" in definitions["TranslatorOptions"]["properties"]["backend"]["enum"]
