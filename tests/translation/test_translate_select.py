"""Selection, batching, input and language-code rules of the translation build: no model needed."""
from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest

from xmdata.schemas import ContractError
from xmdata.schemas.translation import CANDIDATES
from xmdata.tasks.translation.reassemble import reassemble
from xmdata.tasks.translation.select import select_translations
from xmdata.models.token_batches import length_sorted_batches, max_new_tokens
from xmdata.tasks.translation.input import explode_units, read_translation_input, split_sentences
from xmdata.tasks.translation.languages import lid_labels_for, parse_lid_accept


def cand(id, text, rank, label="fr", prob=0.9, qe=0.0, column="caption", element=None, target="fr",
         status="ok", segment=0):
    match = None if status != "ok" else label == target
    return dict(id=id, column=column, element=element, segment=segment, source_text=f"src {id}",
                target_language=target, status=status, candidate=text if status == "ok" else None,
                beam_rank=rank if status == "ok" else None, sequence_score=None if status != "ok" else -0.1 * rank,
                lid_label=label if status == "ok" else None, lid_prob=prob if status == "ok" else None,
                lid_label_raw=label if status == "ok" else None,
                lid_match=match, qe_score=qe if match else None)


def table(rows):
    return pa.table({f.name: [r[f.name] for r in rows] for f in CANDIDATES.schema}, schema=CANDIDATES.schema)


HAND_MADE = table([
    cand("a", "bon", 0, qe=0.20), cand("a", "meilleur", 3, qe=0.70),
    cand("a", "best but English", 1, label="en", qe=0.99),       # wrong language: never chosen
    cand("a", "best but unsure", 2, prob=0.30, qe=0.95),         # right label, too unsure at 0.5
    cand("b", "un", 0, qe=0.40), cand("b", "deux", 1, qe=0.40),  # tie: the better beam rank wins
    cand("c", None, None, status="empty_text"),
    cand("d", "english", 0, label="en"),
])


def by_id(result: pa.Table) -> dict:
    return {row["id"]: row for row in result.to_pylist()}


def test_selection_picks_highest_qe_among_lid_passing_candidates():
    rows = by_id(select_translations(HAND_MADE, min_lid_prob=0.5))
    assert (rows["a"]["text"], rows["a"]["beam_rank"], rows["a"]["status"]) == ("meilleur", 3, "ok")
    assert rows["a"]["qe_score"] == pytest.approx(0.70) and rows["a"]["candidates"] == 4
    assert rows["a"]["lid_passed"] == 2
    assert rows["b"]["text"] == "un"
    assert (rows["c"]["status"], rows["c"]["reason"], rows["c"]["text"]) == ("rejected", "empty_text", None)
    assert (rows["d"]["reason"], rows["d"]["text"]) == ("no_candidate_in_target_language", None)


def test_new_thresholds_change_the_choice_without_a_model():
    lenient = by_id(select_translations(HAND_MADE, min_lid_prob=0.2))
    assert lenient["a"]["text"] == "best but unsure"
    strict = by_id(select_translations(HAND_MADE, min_lid_prob=0.5, min_qe=0.5))
    assert (strict["a"]["status"], strict["b"]["status"], strict["b"]["reason"]) == ("ok", "rejected", "below_min_qe")
    assert strict["b"]["text"] == "un"  # kept visible for inspection, but not ok


def test_quartiles_split_kept_rows_of_each_target_by_qe():
    rows = [cand(f"r{i}", f"t{i}", 0, qe=q) for i, q in enumerate([0.1, 0.8, 0.3, 0.5, 0.9, 0.2, 0.7, 0.4])]
    result = by_id(select_translations(table(rows)))
    quartile = {r: result[r]["qe_quartile"] for r in result}
    assert quartile == {"r0": 1, "r5": 1, "r2": 2, "r7": 2, "r3": 3, "r6": 3, "r1": 4, "r4": 4}


def test_segments_join_back_and_fail_together():
    rows = [cand("a", "Un.", 0, segment=0, qe=0.5), cand("a", "Deux.", 0, segment=1, qe=0.3),
            cand("z", "一。", 0, label="zh", target="zh", segment=0, qe=0.4),
            cand("z", "二。", 0, label="zh", target="zh", segment=1, qe=0.2),
            cand("b", "Un.", 0, segment=0), cand("b", "two", 0, label="en", segment=1)]
    result = by_id(select_translations(table(rows)))
    assert result["a"]["text"] == "Un. Deux." and result["a"]["qe_score"] == pytest.approx(0.4)
    assert result["z"]["text"] == "一。二。"  # no spaces between sentences in Chinese
    assert (result["b"]["status"], result["b"]["reason"], result["b"]["text"]) == (
        "rejected", "no_candidate_in_target_language", None)


def test_reassembled_rows_keep_list_order_and_need_every_part():
    rows = [cand("a", "chat", 0, qe=0.5), cand("a", "r1", 0, column="refs", element=1, qe=0.1),
            cand("a", "r0", 0, column="refs", element=0, qe=0.2),
            cand("b", "chien", 0), cand("b", "anglais", 0, label="en", column="refs", element=0)]
    wide = reassemble(select_translations(table(rows)), ["caption", "refs"], ["refs"]).to_pylist()
    assert wide == [{"id": "a", "target_language": "fr", "caption": "chat", "refs": ["r0", "r1"],
                     "min_qe_score": pytest.approx(0.1)}]


def test_batches_respect_the_token_budget_longest_first():
    lengths = [5, 40, 12, 12, 3, 80, 7]
    batches = length_sorted_batches(lengths, max_tokens=400, num_beams=4)
    assert sorted(i for b in batches for i in b) == list(range(len(lengths)))
    assert batches[0] == [5]  # 80 tokens × 4 beams: alone, even over budget halves
    for batch in batches:
        assert len(batch) == 1 or len(batch) * max(lengths[i] for i in batch) * 4 <= 400
    assert [lengths[b[0]] for b in batches] == sorted((lengths[b[0]] for b in batches), reverse=True)
    assert max_new_tokens(10, 2.0, 10, 1024) == 30 and max_new_tokens(900, 2.0, 10, 1024) == 1024


def test_input_list_columns_explode_and_missing_columns_are_refused(tmp_path):
    path = tmp_path / "in.jsonl"
    path.write_text('{"id": "a", "caption": "A dog.", "refs": ["x", "y"]}\n'
                    '{"id": "b", "caption": null, "refs": []}\n', encoding="utf-8")
    data, list_columns = read_translation_input(str(path), ["caption", "refs"])
    assert list_columns == ["refs"]
    units = pl.from_arrow(explode_units(data, ["caption", "refs"]))
    assert units.rows() == [("a", "caption", None, "A dog."), ("b", "caption", None, None),
                            ("a", "refs", 0, "x"), ("a", "refs", 1, "y"), ("b", "refs", None, None)]
    with pytest.raises(ContractError, match="'foil': required column is missing"):
        read_translation_input(str(path), ["caption", "foil"])
    assert split_sentences("One here. Two there!  Three?") == ["One here.", "Two there!", "Three?"]
    assert split_sentences("一只狗。两只猫。") == ["一只狗。", "两只猫。"]


def test_target_codes_map_to_lid176_labels_through_the_code_table():
    assert lid_labels_for(["fr", "he", "no"], "m2m100") == {"fr": ["fr"], "he": ["he"], "no": ["no"]}
    assert lid_labels_for(["fil"], "madlad", {"fil": ["tl", "fil"]}) == {"fil": ["fil", "tl"]}
    with pytest.raises(ContractError, match="--lid-accept mi=LABEL"):
        lid_labels_for(["mi"], "madlad")  # Maori: lid.176 has no label, nothing could ever pass
    assert parse_lid_accept("no=no,nn; mi=mi") == {"no": ["no", "nn"], "mi": ["mi"]}
    with pytest.raises(ContractError, match="TARGET=LABEL"):
        parse_lid_accept("no")


def test_translate_json_holds_the_params_as_given_and_an_older_one_is_refused_in_one_line(tmp_path):
    """select-translations reads back the run's TranslateParams, not settings renamed on the way."""
    import json

    from xmdata.tasks.translation.params import TranslateParams
    from xmdata.runtime.atomic import write_parquet_atomic
    from xmdata.tasks.translation.outputs import read_run, write_run

    params = TranslateParams(columns=["caption", "refs"], targets=["fr"], filters={"min_lid_prob": 0.7})
    write_parquet_atomic(CANDIDATES.schema.empty_table(), str(tmp_path / "candidates.parquet"))
    write_run(str(tmp_path), params, ["refs"], translator=params.translator.spec().to_dict())
    assert read_run(str(tmp_path)) == (params, ["refs"])
    (tmp_path / "translate.json").write_text(json.dumps({"columns": ["caption"], "min_lid_prob": 0.5}))
    with pytest.raises(ContractError, match="written by an older xmdata; translate again"):
        read_run(str(tmp_path))
