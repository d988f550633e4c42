"""`backend: llm` (issue 65): a causal LM with a chat template, on the tiny Llama and Qwen2 chat models
built with the real classes. Bad input is one line and exit 2 before any model loads; the prompt is the
template in the chat template; replies stop at the end-of-turn token or are `truncated`; the reply
rules clean and refuse, every refused reply a counted reject with its reason; sampled candidates go
through the memo like beams, to the byte."""
from __future__ import annotations

import json
import os
import shutil

import pyarrow as pa
import pytest
from pydantic import ValidationError
from support.cli_in_process import run_xmdata
from support.memo_runs import parquet_bytes, run_shard

from xmdata.models.base import ModelError, ModelSpec
from xmdata.schemas.reasons import REASONS
from xmdata.models.llm_prompt import DEFAULT_PROMPT, render_prompt
from xmdata.tasks.translation.llm_replies import REASONS as REPLY_REASONS, clean_reply, judge
from xmdata.tasks.translation.options import TranslatorOptions
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import MEMO_KIND, translate_stage

TEXTS = ["the dog runs", "a cat sees the tree", "the red house and the child", "water"]


def llm(model: str, **kw) -> dict:
    return {"backend": "llm", "model": model, "num_beams": 3, "num_candidates": 2, **kw}


@pytest.mark.parametrize("translator, message", [
    (llm("m", prompt="Translate into {target}."), "no {text} placeholder"),
    (llm("m", prompt="Translate {txt} into {target}: {text}"), "unknown placeholder(s) {txt}"),
    (llm("m", sampling="epsilon", epsilon=1.0), "less than 1"),
    (llm("m", sampling="epsilon", epsilon=0), "greater than 0"),
    (llm("m", sampling="top_p", top_p=1.5), "less than 1"),
    (llm("m", sampling="temperature", temperature=0), "greater than 0"),
    (llm("m", sampling="temperature", num_candidates=0), "greater than or equal to 1"),
    (llm("m", sampling="epsilon", engine="ctranslate2"), "sampling on CTranslate2 is refused"),
    ({"backend": "m2m100", "prompt": "{text}"}, "prompt: only with backend llm"),
    ({"backend": "llm"}, "backend llm: name the model"),
])
def test_bad_llm_options_are_refused_by_the_params_model(translator, message):
    with pytest.raises(ValidationError) as caught:
        TranslateParams(targets=["fr"], translator=translator)
    assert message in str(caught.value)


def test_default_options_add_nothing_to_a_beam_search_shard(tiny_models):
    """The fields at their defaults: no sampler in the record (the pinned hashes: tests/cli/test_params_hashes.py),
    and samples may outnumber beams."""
    assert "sampler" not in TranslatorOptions().beam_search()
    sampled = TranslatorOptions(**llm("m", sampling="epsilon", num_beams=1, num_candidates=8))
    assert sampled.beam_search()["sampler"] == {"sampling": "epsilon", "value": 0.02}
    assert sampled.candidate_width() == 8
    assert sampled.spec().option("prompt") == DEFAULT_PROMPT


def test_bad_input_at_the_command_line_is_one_line_and_exit_2_before_any_model_loads(tiny_models, tmp_path):
    (tmp_path / "in.jsonl").write_text(json.dumps({"id": "a", "text": "the dog"}) + "\n")
    base = ["translate", str(tmp_path / "in.jsonl"), "--targets", "fr", "--out", str(tmp_path / "out"),
            "--backend", "llm", "--model", tiny_models["llm"].name_or_path]
    for extra, said in ([["--sampling", "top_p", "--top-p", "0"], "--top-p: Input should be greater than 0"],
                        [["--prompt", "Translate this."], "--prompt: the template has no {text}"],
                        [["--sampling", "epsilon", "--engine", "ctranslate2"], "sampling on CTranslate2"]):
        done = run_xmdata([*base, *extra], dict(os.environ))
        assert done.returncode == 2, done.stderr
        assert said in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    # A model without a chat template: its tokenizer alone is read, and refused.
    bare = tmp_path / "no-template"
    shutil.copytree(tiny_models["llm"].name_or_path, bare)
    (bare / "chat_template.jinja").unlink()
    done = run_xmdata([*base[:-1], str(bare)], dict(os.environ))
    assert done.returncode == 2 and "has no chat template" in done.stderr, done.stderr
    assert not (tmp_path / "out").exists()


def test_the_prompt_names_the_languages_in_english_inside_each_familys_chat_template(tiny_models):
    from xmdata.models.llm import LlmTranslator

    llama, qwen = (LlmTranslator(tiny_models[k]) for k in ("llm", "llm_qwen2"))
    for model in (llama, qwen):
        model.load_tokenizer()
    prompt = llama.prompt_text("a {target} dog", "en", "fr")
    assert prompt.startswith("<s><|start_header_id|>user<|end_header_id|>\n\nTranslate the following English text "
                             "into French.") and prompt.endswith("a {target} dog<|eot_id|><|start_header_id|>"
                                                                 "assistant<|end_header_id|>\n\n")
    assert qwen.prompt_text("x", "en", "zh").endswith("into Chinese. Reply with the Chinese translation only.\n\nx"
                                                      "<|im_end|>\n<|im_start|>assistant\n")
    # The end of a turn is the token each template writes after a reply, before the EOS.
    assert llama.tokenizer.convert_ids_to_tokens(llama.stop_ids[0]) == "<|eot_id|>"
    assert qwen.tokenizer.convert_ids_to_tokens(qwen.stop_ids[0]) == "<|im_end|>"
    assert render_prompt("{source}>{target}: {text}", "{source}", "English", "German") == "English>German: {source}"
    with pytest.raises(ValueError, match="no English name"):
        llama.prompt_text("x", "en", "qqq")


@pytest.mark.parametrize("raw, truncated, reason, text", [
    ("Here is the translation: «Le chien court.»", False, None, "Le chien court."),
    ("Sure! Here's the French translation:\n\"Le chien\"", False, None, "Le chien"),
    ("Translation: Der Hund", False, None, "Der Hund"),
    ("Der Hund läuft", True, "truncated", "Der Hund läuft"),
    ("  \"\"  ", False, "empty_output", ""),
    ("I'm sorry, but I cannot translate this.", False, "refusal", None),
    ("The answer is 4.", False, "answer_not_translation", None),
    ("The  Dog runs", False, "copy_of_source", None),
])
def test_reply_rules_clean_then_refuse_with_a_registered_reason(raw, truncated, reason, text):
    verdict = judge(raw, truncated, "the dog runs")
    assert verdict.reason == reason
    if text is not None:
        assert verdict.text == text
    assert set(REPLY_REASONS) <= set(REASONS)
    assert clean_reply("'«x»'") == "x"


def stage(model: ModelSpec, **kw):
    p = TranslateParams(targets=["fr", "de"], translator=llm(model.name_or_path, batch_tokens=4096, **kw))
    return translate_stage(p, p.translator.spec())


def table(texts=TEXTS):
    return pa.table({"id": [f"r{i}" for i in range(len(texts))], "text": texts})


@pytest.mark.parametrize("family", ["llm", "llm_qwen2"])
def test_replies_that_end_their_turn_are_candidates_and_cut_ones_counted_rejects(tiny_models, family):
    kept, rejects, _ = run_shard(stage(tiny_models[family]), table(), None)
    ok = [r for r in kept.to_pylist() if r["status"] == "ok"]
    assert ok and all(r["candidate"] for r in ok)
    assert {(r["id"], r["target_language"]) for r in kept.to_pylist()} == {(f"r{i}", t) for i in range(4)
                                                                             for t in ("fr", "de")}
    # One new token: a reply is its end of turn (empty) or cut there (truncated): each refused, and counted.
    kept, rejects, _ = run_shard(stage(tiny_models[family], max_new_tokens_ratio=0.001, max_new_tokens_extra=0),
                                 table(), None)
    statuses = set(kept.column("status").to_pylist())
    assert statuses <= {"truncated", "empty_output"} and "truncated" in statuses
    reasons = rejects.column("reason").to_pylist()
    assert reasons.count("truncated") + reasons.count("empty_output") == 4 * 2 * 2  # units x targets x replies
    assert all(" -> " in v and "reply " in v for v in rejects.column("value").to_pylist())


def test_sampled_candidates_go_through_the_memo_to_the_byte(tiny_models, tmp_path, monkeypatch):
    sampled = dict(sampling="temperature", temperature=0.7, num_candidates=3, max_new_tokens_ratio=0.1)
    off, off_rejects, _ = run_shard(stage(tiny_models["llm"], **sampled), table(), None)
    location = str(tmp_path / "memo")
    run_shard(stage(tiny_models["llm"], **sampled), table(TEXTS[::2]), location)
    kept, rejects, counts = run_shard(stage(tiny_models["llm"], **sampled), table(), location)
    assert counts[MEMO_KIND]["served"] == 2 * 2 and counts[MEMO_KIND]["computed"] == 2 * 2
    assert parquet_bytes(kept) == parquet_bytes(off) and parquet_bytes(rejects) == parquet_bytes(off_rejects)
    # The reply rules run over the raw replies on every build: other rules are another shard, the same entries.
    from xmdata.tasks.translation import translate as translate_module

    before = stage(tiny_models["llm"], **sampled).params_hash
    monkeypatch.setattr(translate_module, "RULES_VERSION", 2)
    other_rules = stage(tiny_models["llm"], **sampled)
    assert other_rules.params_hash != before  # finished shards are redone under other rules...
    _, _, served = run_shard(other_rules, table(), location)
    assert served[MEMO_KIND] == {"served": 4 * 2}  # ...from the memo's raw replies
    monkeypatch.undo()
    # Another rule or value keys other entries: nothing served.
    _, _, other = run_shard(stage(tiny_models["llm"], **{**sampled, "temperature": 0.8}), table(), location)
    assert "served" not in other[MEMO_KIND]


def test_a_model_without_a_chat_template_is_refused_when_its_tokenizer_loads(tiny_models, tmp_path):
    from xmdata.models.llm import LlmTranslator

    bare = tmp_path / "bare"
    shutil.copytree(tiny_models["llm_qwen2"].name_or_path, bare)
    (bare / "chat_template.jinja").unlink()
    with pytest.raises(ModelError, match="has no chat template"):
        LlmTranslator(ModelSpec("llm", str(bare))).load_tokenizer()
