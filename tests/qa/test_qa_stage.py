"""The translate_qa stage and selection with a scripted translator: one failing batch refuses only its
own instances, every other instance keeps its own translation; input filter, cap and label derivation."""
from __future__ import annotations


import polars as pl
import pyarrow as pa
import pytest

from xmdata.data import sample_path
from xmdata.tasks.translation.options import FilterOptions
from xmdata.tasks.translation.params import TranslateQaParams
from xmdata.models.base import Candidate, ModelSpec
from xmdata.schemas import ContractError
from xmdata.tasks.qa import translate as qa_translate
from xmdata.tasks.qa.input import read_qa_input, select_instances
from xmdata.tasks.qa.labels import resolve_labels
from xmdata.tasks.qa.outputs import count_outcomes, select_candidates
from xmdata.tasks.qa.translate import translate_qa_stage


class ScriptedTranslator:
    """'Translates' to German by swapping the labels and upper-casing; raises on a batch holding FAIL
    (`error`), and runs out of memory on a batch holding OOM or of more than `memory` texts."""

    max_input_tokens = 64

    def __init__(self):
        self.batches = []
        self.error = RuntimeError("CUDA error: device-side assert triggered")  # not out of memory
        self.memory = 1000

    def token_lengths(self, texts, source, target):
        return [len(t.split()) for t in texts]

    def prepare(self, texts, source, target):
        return list(texts)

    def predict(self, batch, num_beams, num_candidates, max_new_tokens):
        self.batches.append(batch)
        if any("FAIL" in t for t in batch):
            raise self.error
        if len(batch) > self.memory or any("OOM" in t for t in batch):
            import torch

            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")
        outs = [t.replace("Question:", "Frage:").replace("Answer:", "Antwort:").upper() for t in batch]
        return [[Candidate(o, 0, -0.1), Candidate("kaputt", 1, -0.9)][:num_candidates] for o in outs]


def rows(n: int, fail: set[int], oom: frozenset[int] = frozenset()) -> pa.Table:
    return read_qa_input(pa.table({
        "id": [f"r{i}" for i in range(n)], "task": ["VQA"] * n,
        "query": [f"<|image_1|>\nWhat is item {i}{' FAIL' if i in fail else ''}{' OOM' if i in oom else ''}"
                  for i in range(n)],
        "positive": [f"Item {i} is red" for i in range(n)], "negative": [None] * n}))


@pytest.fixture
def scripted(monkeypatch):
    translator = ScriptedTranslator()
    monkeypatch.setattr(qa_translate, "get_model", lambda kind, spec: translator)
    return translator


def run(table, num_candidates=1):
    labels = {"de": {"question": ["Frage"], "answer": ["Antwort"]}}
    params = TranslateQaParams(targets=["de"], translator=dict(
        num_beams=2, num_candidates=num_candidates, batch_tokens=2 * 11 * 2, max_new_tokens_ratio=2.0,
        max_new_tokens_extra=4))
    stage = translate_qa_stage(params, ModelSpec("madlad", "/none"), labels)
    return stage.fn(table, stage.params)


def test_an_unknown_translator_error_fails_the_shard_as_on_the_text_path(scripted):
    """The one rule (tasks/translation/beam_search.py): an error that is not a row's fails the shard,
    so the executor retries or names it; it is never turned into rejected rows."""
    with pytest.raises(RuntimeError, match="device-side assert"):
        run(rows(7, fail={3}))


def test_batches_keep_every_instance_with_its_own_text(scripted):
    candidates, rejects = run(rows(7, fail=set()))
    assert max(len(b) for b in scripted.batches) == 2 and len(scripted.batches) == 4 and rejects.num_rows == 0
    kept, refused = select_candidates(pl.from_arrow(candidates), False, 0.0, None)
    assert refused.height == 0
    # every kept instance carries its own text: no padding, no shift
    for row in kept.filter(pl.col("part") == "query").iter_rows(named=True):
        assert row["candidate"] == f"<|image_1|>\nWHAT IS ITEM {row['id'][1:]}"
    positives = kept.filter(pl.col("part") == "positive")
    assert positives["candidate"].to_list() == [f"ITEM {i[1:]} IS RED" for i in positives["id"]]
    counts = count_outcomes(kept, refused)
    assert dict(zip(counts["outcome"], counts["instances"])) == {"kept": 7}


def test_out_of_memory_halves_the_batch_and_rejects_only_the_item_that_fails_alone(scripted):
    scripted.memory = 1  # every batch of two runs out of memory
    candidates, rejects = run(rows(5, fail=set(), oom={2}))
    # batches of 2, 2 and 1 (filled to 2 with a copy): each 2 runs out of memory and its items run
    # alone; r2 fails alone too
    assert sorted(len(b) for b in scripted.batches) == [1, 1, 1, 1, 1, 2, 2, 2]
    assert rejects.column("reason").to_pylist() == ["out_of_memory"]
    assert rejects.column("row_id").to_pylist() == ["r2"] and "sizes" in rejects.column("value")[0].as_py()
    kept, refused = select_candidates(pl.from_arrow(candidates), False, 0.0, None)
    assert set(kept["id"]) == {"r0", "r1", "r3", "r4"} and list(refused["reason"]) == ["out_of_memory"]


def test_extraction_reasons_per_candidate_and_the_best_extracting_candidate_is_kept(scripted):
    candidates, rejects = run(rows(2, fail=set()), num_candidates=2)
    frame = pl.from_arrow(candidates)
    assert frame.filter(pl.col("beam_rank") == 1)["status"].unique().to_list() == ["label_missing"]
    assert rejects.num_rows == 0
    kept, refused = select_candidates(frame, False, 0.0, None)
    assert kept["beam_rank"].unique().to_list() == [0] and refused.height == 0


def test_scored_selection_needs_lid_on_every_part_and_applies_min_qe(scripted):
    frame = pl.from_arrow(run(rows(2, fail=set()))[0]).with_columns(
        pl.col("id").is_in(["r0"]).alias("lid_match"), pl.lit(0.9).cast(pl.Float32).alias("lid_prob"),
        pl.lit(0.3).cast(pl.Float32).alias("qe_score"))
    kept, refused = select_candidates(frame, True, 0.5, None)
    assert kept["id"].unique().to_list() == ["r0"]
    assert refused.rows() == [("r1", "VQA", "de", "no_candidate_in_target_language")]
    _, refused = select_candidates(frame, True, 0.5, 0.4)
    assert sorted(refused["reason"]) == ["below_min_qe", "no_candidate_in_target_language"]


def test_sample_input_excluded_tasks_and_per_task_cap():
    table = read_qa_input(sample_path("mmeb.jsonl"))
    kept, stats = select_instances(table, per_task=1)
    assert stats["ChartQA"] == {"rows": 1, "excluded": 1, "over_cap": 0, "selected": 0}
    assert stats["A-OKVQA"] == {"rows": 2, "excluded": 0, "over_cap": 1, "selected": 1}
    assert "aokvqa-0" in kept.column("id").to_pylist() and "aokvqa-1" not in kept.column("id").to_pylist()
    mmeb = read_qa_input(pa.table({"qry": ["q"], "pos_text": ["p"], "neg_text": [""], "subset": ["OK-VQA"]}))
    assert mmeb.column("id").to_pylist() == ["OK-VQA/0"]
    with pytest.raises(ContractError, match="'positive': required column is missing"):
        read_qa_input(pa.table({"id": ["a"], "task": ["t"], "query": ["q"]}))


def test_missing_label_words_are_derived_once_and_reused(tmp_path):
    import json

    calls = []

    class Words:
        def prepare(self, texts, source, target):
            calls.append(target)
            return texts

        def predict(self, batch, *args):
            return [[Candidate("Swali:", 0, 0.0)], [Candidate("« Jibu »", 0, 0.0)]]

    labels = resolve_labels(["fr", "xx"], lambda: Words(), "en", "m1", str(tmp_path), table={"fr": {
        "question": ["Question"], "answer": ["Réponse"]}})
    assert labels["xx"]["question"] == ["Swali"] and labels["xx"]["answer"] == ["Jibu"]
    assert labels["xx"]["source"].startswith("derived") and labels["fr"]["source"] == "data/qa_labels.json"
    (tmp_path / "qa_labels.json").write_text(json.dumps({"labels": labels}))
    again = resolve_labels(["xx"], lambda: Words(), "en", "m1", str(tmp_path), table={})
    assert again["xx"]["answer"] == ["Jibu"] and calls == ["xx"]  # reused, not translated again


def test_lid_and_qe_stages_of_the_translation_issue_score_qa_candidates(scripted, tiny_models):
    from xmdata.tasks.translation.candidate_scores import (CandidateLidShard, CandidateQeShard, estimate_candidate_quality,
                                               identify_candidate_language)

    candidates, _ = run(rows(3, fail=set(), oom={2}))
    labelled, _ = identify_candidate_language(candidates, CandidateLidShard(
        model=tiny_models["fasttext"], accepted_labels={"de": ["de", "en"]}))
    scored, _ = estimate_candidate_quality(labelled, CandidateQeShard(
        model=FilterOptions(qe_model=tiny_models["cometkiwi"].name_or_path).qe_spec()))
    frame = pl.from_arrow(scored)
    ok = frame.filter(pl.col("status") == "ok")
    assert ok["id"].to_list() == ["r0", "r0", "r1", "r1"] and ok["lid_label"].null_count() == 0
    # r2 ran out of memory alone: its rows stay, unscored
    assert frame.filter(pl.col("status") != "ok")["lid_label"].null_count() == 2
    assert ok.filter(pl.col("lid_match"))["qe_score"].null_count() == 0
    kept, refused = select_candidates(frame, True, 0.0, None)
    assert refused.filter(pl.col("id") == "r2")["reason"].to_list() == ["out_of_memory"]
    assert set(kept["id"]) | set(refused["id"]) == {"r0", "r1", "r2"}
