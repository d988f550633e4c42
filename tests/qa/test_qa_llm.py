"""translate-qa with an llm translator (issue 65): its raw replies are cleaned and screened by the reply
rules (tasks/translation/llm_replies.py) first, then the Q/A extraction rules apply to what is left,
as they do to MADLAD's output; the raw reply stays in `output`. Scripted replies for each rule, then
the tiny Llama chat model through the stage."""
from __future__ import annotations

import polars as pl
import pytest
from test_qa_stage import rows

from xmdata.models.base import ModelSpec
from xmdata.models.llm import Reply
from xmdata.tasks.qa import translate as qa_translate
from xmdata.tasks.qa.translate import translate_qa_stage
from xmdata.tasks.translation.params import TranslateQaParams

LABELS = {"de": {"question": ["Frage"], "answer": ["Antwort"]}}


class ScriptedLlm:
    """Replies as a chat model may: a preamble and quotes around a good one, a refusal, a cut one."""

    max_input_tokens = 64
    candidate_type = Reply

    def token_lengths(self, texts, source, target):
        return [len(t.split()) for t in texts]

    def prepare(self, texts, source, target):
        return list(texts)

    def predict(self, batch, num_beams, num_candidates, max_new_tokens):
        good = [t.replace("Question:", "Frage:").replace("Answer:", "Antwort:").upper() for t in batch]
        return [[Reply(f'Here is the translation: "{g}"', 0, -0.1), Reply("I'm sorry, I cannot help.", 1, -0.5),
                 Reply(g[:12], 2, -0.9, truncated=True)][:num_candidates] for g in good]


def stage(model: str, **translator):
    params = TranslateQaParams(targets=["de"], translator={"backend": "llm", "model": model, **translator})
    return translate_qa_stage(params, params.translator.spec(), LABELS)


def test_reply_rules_run_before_the_extraction_rules(monkeypatch):
    monkeypatch.setattr(qa_translate, "get_model", lambda kind, spec: ScriptedLlm())
    s = stage("/none", num_beams=3, num_candidates=3)
    assert s.params.model_dump()["reply_rules"] == 1
    candidates, rejects = s.fn(rows(2, fail=set()), s.params)
    frame = pl.from_arrow(candidates)
    by_rank = dict(frame.group_by("beam_rank").agg(pl.col("status").unique()).iter_rows())
    assert by_rank == {0: ["ok"], 1: ["refusal"], 2: ["truncated"]}
    query = frame.filter((pl.col("beam_rank") == 0) & (pl.col("part") == "query"))
    assert query["candidate"].to_list() == ["<|image_1|>\nWHAT IS ITEM 0", "<|image_1|>\nWHAT IS ITEM 1"]
    assert query["output"].str.starts_with("Here is the translation: ").all()  # the raw reply, as the model wrote it
    assert rejects.num_rows == 0  # each instance kept one candidate


def test_the_tiny_chat_model_through_the_qa_stage(tiny_models):
    s = stage(tiny_models["llm"].name_or_path, num_beams=2, num_candidates=2, max_new_tokens_ratio=0.05)
    candidates, rejects = s.fn(rows(3, fail=set()), s.params)
    statuses = set(candidates.column("status").to_pylist())
    # Token salad has no labels: every candidate is refused with a registered reason, each instance once.
    assert statuses and "ok" not in statuses and rejects.num_rows == 3
    assert all(o is not None for o in candidates.column("output").to_pylist())
