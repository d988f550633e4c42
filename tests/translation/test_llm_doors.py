"""`backend: llm` through every door (issue 65): a pool with a seq2seq engine, built in-process by the
translate flow's own function; a release config naming `tiny:llm` and `tiny:llm_qwen2` (and refusing a
bad sampling value in one line); the translate flow's signature (the Prefect UI's form) offering the
llm fields with their bounds; the --translator flag of a pool."""
from __future__ import annotations

import pyarrow as pa
import pytest

from xmdata.runtime import memo
from xmdata.runtime.session import execution_session
from xmdata.schemas import ContractError
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.pool import engine_runs

GENERATION = dict(num_beams=3, num_candidates=2, batch_tokens=4096, max_new_tokens_ratio=0.1, max_new_tokens_extra=4)
TEXTS = ["The dog runs in the house.", "A red cat sees the water.", "The child and the book.", ""]


def test_a_pool_of_m2m100_and_an_llm_builds_one_candidates_table(tiny_models, tmp_path):
    import polars as pl

    from xmdata.flows.translate import translate_texts

    params = TranslateParams(targets=["fr", "fil"], translator=[
        {**GENERATION, "backend": "m2m100", "model": tiny_models["m2m100"].name_or_path},
        {**GENERATION, "backend": "llm", "model": tiny_models["llm"].name_or_path, "sampling": "epsilon"}],
        filters={"qe_model": tiny_models["cometkiwi"].name_or_path, "min_lid_prob": 0.0,
                 "lid_accept": "fr=fr,as,ru,new,ar;fil=tl,as,ru,new,ar"})
    m2m100, llm = engine_runs(params)
    assert m2m100.params.targets == ["fr", "tl"] and llm.params.targets == ["fr", "fil"]  # an llm takes the project's
    with execution_session("inprocess"), memo.using(memo.MemoOptions(None)):
        translate_texts(pa.table({"id": [f"r{i}" for i in range(4)], "text": TEXTS}), str(tmp_path), 1, params)
    candidates = pl.read_parquet(tmp_path / "candidates.parquet")
    engines = set(candidates.filter(pl.col("status") == "ok")["engine"])
    assert engines == {"m2m100:m2m100", "llm:llm"}, candidates
    assert set(candidates["target_language"]) == {"fr", "fil"}
    assert (tmp_path / "translations.parquet").exists()


def test_a_release_config_names_the_tiny_chat_models_and_refuses_bad_sampling(tiny_models, tmp_path):
    from xmdata.flows.release_config import load_release_config
    from xmdata.flows.release_refs import resolve_tiny_models

    (tmp_path / "in.jsonl").write_text('{"id": "a", "text": "the dog"}\n')

    def config(translator: str) -> str:
        path = tmp_path / "release.yaml"
        path.write_text(f"name: t\nversion: '1'\ntranslation:\n  input: in.jsonl\n  targets: [fr]\n"
                        f"  translator: {translator}\n")
        return str(path)

    for name in ("llm", "llm_qwen2"):
        release = load_release_config(config(f'{{backend: llm, model: "tiny:{name}", sampling: top_p, top_p: 0.8}}'))
        resolved = resolve_tiny_models(release.config)
        assert resolved.translation.translator.model == tiny_models[name].name_or_path
        assert resolved.translation.translator.sampler() == {"sampling": "top_p", "value": 0.8}
    with pytest.raises(ContractError) as caught:
        load_release_config(config('{backend: llm, model: "tiny:llm", sampling: epsilon, epsilon: 2}'))
    assert "translation.translator.epsilon: Input should be less than 1" in str(caught.value)
    assert len(str(caught.value).splitlines()) == 1


def test_the_ui_form_offers_the_llm_fields_with_their_bounds():
    from prefect.utilities.callables import parameter_schema

    from xmdata.flows.translate import translate_flow

    schema = parameter_schema(translate_flow).model_dump_for_openapi()
    fields = schema["definitions"]["TranslatorOptions"]["properties"]
    assert "llm" in fields["backend"]["enum"]
    assert fields["epsilon"]["exclusiveMinimum"] == 0 and fields["epsilon"]["exclusiveMaximum"] == 1
    assert fields["temperature"]["exclusiveMinimum"] == 0
    assert {"prompt", "sampling", "top_p"} <= set(fields)


def test_the_translator_flag_of_a_pool_takes_the_llm_keys(tiny_models):
    from xmdata.cli_parser import build_parser
    from xmdata.cli_params import params_from_args

    args = build_parser().parse_args([
        "translate", "in.parquet", "--targets", "fr", "--out", "o", "--translator", "backend=m2m100",
        "--translator", f"backend=llm,model={tiny_models['llm'].name_or_path},sampling=temperature,temperature=0.5"])
    params = params_from_args(args)
    assert params.engines[1].sampler() == {"sampling": "temperature", "value": 0.5}


def test_explain_shows_the_prompt_as_the_model_read_it_and_the_refused_raw_replies(tiny_models, tmp_path):
    from xmdata.flows.translate import translate_texts
    from xmdata.tasks.explain.explain import explain

    params = TranslateParams(targets=["fr"], translator={
        "backend": "llm", "model": tiny_models["llm"].name_or_path, "num_beams": 2, "num_candidates": 2,
        "max_new_tokens_ratio": 0.001, "max_new_tokens_extra": 0, "prompt": "To {target}: {text}"},
        filters={"qe_model": tiny_models["cometkiwi"].name_or_path})
    with execution_session("inprocess"), memo.using(memo.MemoOptions(None)):
        translate_texts(pa.table({"id": ["r0"], "text": ["the dog runs"]}), str(tmp_path), 1, params)
    step = next(s for s in explain(str(tmp_path), "r0").traces[0].steps if s.stage == "translate")
    assert step.values["prompt"] == {"fr": "<s><|start_header_id|>user<|end_header_id|>\n\nTo French: the dog runs"
                                           "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"}
    refused = step.values["replies refused"]
    assert refused and all(r.startswith(("truncated: ", "empty_output: ")) and "-> fr: reply " in r for r in refused)
