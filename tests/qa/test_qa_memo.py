"""The memo of model work on the Q/A path (runtime/memo.py): the raw beam candidates of a packed
instance are kept, extraction runs on every build — so a shard assembled from the memo is the bytes of
a memo-off build, and new label words (which decide extraction, not the candidates) reuse them."""
from __future__ import annotations

from support.memo_runs import parquet_bytes, run_shard as run

from xmdata.data import sample_path
from xmdata.tasks.qa.input import read_qa_input
from xmdata.tasks.qa.translate import MEMO_EXCLUDE, MEMO_KIND, translate_qa_stage
from xmdata.tasks.translation.params import TranslateQaParams

LABELS = {"fr": {"question": ["Question"], "answer": ["Réponse"]}, "de": {"question": ["Frage"], "answer": ["Antwort"]}}
OTHER_LABELS = {"fr": {"question": ["Demande"], "answer": ["Réplique"]}, "de": {"question": ["Frage"], "answer": ["Antwort"]}}


def stage(models, targets=("fr", "de"), labels=LABELS):
    params = TranslateQaParams(targets=list(targets), translator=dict(
        num_beams=2, num_candidates=2, batch_tokens=4096, max_new_tokens_ratio=1.0, max_new_tokens_extra=4))
    return translate_qa_stage(params, models["madlad"], labels)


def test_qa_candidates_from_the_memo_are_the_memo_off_bytes_and_new_labels_reuse_them(tiny_models, tmp_path):
    table = read_qa_input(sample_path("mmeb.jsonl")).slice(0, 4)  # each pass beam-searches every instance
    location = str(tmp_path / "memo")
    off_kept, off_rejects, none = run(stage(tiny_models), table, None)
    assert none == {} and off_kept.num_rows > 0
    _, _, first = run(stage(tiny_models), table.slice(0, table.num_rows // 2), location)
    kept, rejects, second = run(stage(tiny_models), table, location)
    assert second[MEMO_KIND]["served"] == first[MEMO_KIND]["computed"] > 0
    assert parquet_bytes(kept) == parquet_bytes(off_kept) and parquet_bytes(rejects) == parquet_bytes(off_rejects)

    # Label words decide the extraction, which runs again: served whole, the same bytes as without the memo
    relabelled, relabelled_rejects, third = run(stage(tiny_models, labels=OTHER_LABELS), table, location)
    assert third[MEMO_KIND].get("computed", 0) == 0
    off_relabelled, off_relabelled_rejects, _ = run(stage(tiny_models, labels=OTHER_LABELS), table, None)
    assert parquet_bytes(relabelled) == parquet_bytes(off_relabelled)
    assert parquet_bytes(relabelled_rejects) == parquet_bytes(off_relabelled_rejects)
    assert set(MEMO_EXCLUDE) == {"target_languages", "labels", "translator.name_or_path", "reply_rules"}  # an llm's reply rules: re-run on the kept raw replies

    # a target removed computes nothing
    _, _, fewer = run(stage(tiny_models, targets=("de",), labels={"de": LABELS["de"]}), table, location)
    assert fewer[MEMO_KIND].get("computed", 0) == 0 and fewer[MEMO_KIND]["served"] > 0
