"""MBR and QE-then-MBR selection from stored utilities: the expected utility by hand, the tie rule,
a single passing candidate, the LID filter before and the QE floor after; the params' bounds from
every door; chrF utilities against sacrebleu. No model."""
from __future__ import annotations

import polars as pl
import pyarrow as pa
import pytest
from pydantic import ValidationError

from xmdata.schemas.mbr import MBR_UTILITIES
from xmdata.tasks.translation.mbr import MbrSelection
from xmdata.tasks.translation.mbr_utilities import MbrUtilitiesShard, mbr_utilities, pairs_of
from xmdata.tasks.translation.params import TranslateParams, TranslateQaParams
from xmdata.tasks.translation.select import shard_units

from test_translate_select import cand, table

# Unit "a": four candidates in French (rank 3 unsure of its language), one in English.
CANDS = table([
    cand("a", "x0", 0, qe=0.9), cand("a", "x1", 1, qe=0.5), cand("a", "x2", 2, qe=0.4),
    cand("a", "x3", 3, prob=0.3, qe=0.8), cand("a", "english", 4, label="en"),
    cand("b", "only", 0, qe=0.6), cand("b", "english", 1, label="en"),
    cand("t", "t0", 0, qe=0.5), cand("t", "t1", 1, qe=0.5),
])
# Utilities of (candidate, reference) as a matrix per unit: U[h][r].
U_A = {0: {1: 10, 2: 10, 3: 90}, 1: {0: 50, 2: 60, 3: 0}, 2: {0: 40, 1: 70, 3: 0}, 3: {0: 99, 1: 99, 2: 99}}
U_T = {0: {1: 30.0}, 1: {0: 30.0}}  # symmetric: a tie, won by the better beam rank


def utilities() -> pl.DataFrame:
    rows = []
    for unit, matrix in (("a", U_A), ("t", U_T)):
        for h, refs in matrix.items():
            for r, value in refs.items():
                rows.append(dict(id=unit, column="caption", element=None, segment=0, source_text=f"src {unit}",
                                 target_language="fr", engine=None, beam_rank=h, ref_engine=None, ref_beam_rank=r,
                                 utility=float(value)))
    return pl.from_arrow(pa.Table.from_pylist(rows, schema=MBR_UTILITIES.schema))


def select(kind: str, k: int | None = None, min_lid_prob: float = 0.5, min_qe: float | None = None):
    mbr = MbrSelection(kind, k, utilities())
    units = shard_units(CANDS, min_lid_prob, min_qe, None, mbr)
    return {row["id"]: row for row in units.iter_rows(named=True)}, {
        row["id"]: row for row in pl.concat(mbr.decisions).iter_rows(named=True)}


def test_mbr_picks_the_highest_expected_utility_over_the_other_passing_candidates():
    chosen, decided = select("mbr")
    # Passing: ranks 0, 1, 2 (3 is under min_lid_prob, 4 is English). E[0] = 10, E[1] = 55, E[2] = 55: a
    # tie of 1 and 2 goes to the better rank; QE would have taken rank 0.
    assert chosen["a"]["beam_rank"] == 1 and chosen["a"]["text"] == "x1"
    assert decided["a"]["expected_utility"] == pytest.approx(55.0)
    assert (decided["a"]["runner_up_beam_rank"], decided["a"]["runner_up_utility"]) == (2, pytest.approx(55.0))
    assert (decided["a"]["qe_beam_rank"], decided["a"]["pseudo_references"]) == (0, 2)
    assert chosen["t"]["beam_rank"] == 0  # a tie: the better beam rank


def test_the_lid_threshold_decides_the_pseudo_references_before_mbr():
    chosen, decided = select("mbr", min_lid_prob=0.2)  # rank 3 now passes: E[3] = 99, E[0] = 110/3
    assert chosen["a"]["beam_rank"] == 3 and decided["a"]["pseudo_references"] == 3
    assert decided["a"]["expected_utility"] == pytest.approx(99.0)


def test_qe_mbr_takes_qe_s_top_k_as_hypotheses_and_pseudo_references():
    chosen, decided = select("qe_mbr", k=2)  # QE's top 2: ranks 0 and 1; E[0] = 10, E[1] = 50
    assert chosen["a"]["beam_rank"] == 1 and decided["a"]["expected_utility"] == pytest.approx(50.0)
    assert decided["a"]["runner_up_beam_rank"] == 0 and decided["a"]["runner_up_utility"] == pytest.approx(10.0)


def test_qe_mbr_s_top_k_follows_qe_reranking_s_tie_rule_not_the_last_bits():
    """QE scores within DECISION_TOLERANCE of the best are a tie (the better beam rank first), as QE
    reranking has them, so kernel noise in the last bits does not change the hypotheses: by raw score
    the top 2 would be ranks 2 and 1 (and rank 2 would win)."""
    near = table([cand("n", "n0", 0, qe=0.899996), cand("n", "n1", 1, qe=0.899997), cand("n", "n2", 2, qe=0.9)])
    rows = [dict(id="n", column="caption", element=None, segment=0, source_text="src n", target_language="fr",
                 engine=None, beam_rank=h, ref_engine=None, ref_beam_rank=r, utility=float(value))
            for h, refs in {0: {1: 80, 2: 0}, 1: {0: 20, 2: 0}, 2: {0: 100, 1: 100}}.items()
            for r, value in refs.items()]
    mbr = MbrSelection("qe_mbr", 2, pl.from_arrow(pa.Table.from_pylist(rows, schema=MBR_UTILITIES.schema)))
    chosen = shard_units(near, 0.5, None, None, mbr).row(0, named=True)
    decided = pl.concat(mbr.decisions).row(0, named=True)
    assert (chosen["beam_rank"], decided["expected_utility"]) == (0, pytest.approx(80.0))
    assert (decided["runner_up_beam_rank"], decided["qe_beam_rank"]) == (1, 0)


def test_a_single_passing_candidate_is_taken_with_a_null_utility_and_the_qe_floor_applies_after():
    chosen, decided = select("mbr", min_qe=0.55)
    assert chosen["b"]["text"] == "only" and chosen["b"]["status"] == "ok"
    assert decided["b"]["expected_utility"] is None and decided["b"]["pseudo_references"] == 0
    assert (chosen["a"]["status"], chosen["a"]["reason"]) == ("rejected", "below_min_qe")  # x1's QE is 0.5


def test_chrf_utilities_are_sacrebleu_s_sentence_chrf_without_self_pairs():
    from sacrebleu.metrics import CHRF

    from xmdata.tasks.translation.mbr_utilities import mbr_spec

    spec = mbr_spec(TranslateParams(targets=["fr"], filters={"select": "mbr"}).filters)
    out, _ = mbr_utilities(CANDS, MbrUtilitiesShard(metric=spec, engine="m2m100:m"))
    rows = pl.from_arrow(out).filter(pl.col("id") == "a")
    assert rows.height == 4 * 3 and len(pairs_of(4)) == 12  # lid_match candidates only: N(N-1)
    one = rows.filter((pl.col("beam_rank") == 1) & (pl.col("ref_beam_rank") == 3)).row(0, named=True)
    assert one["utility"] == pytest.approx(CHRF().sentence_score("x1", ["x3"]).score, abs=1e-4)
    assert set(rows["engine"]) == {"m2m100:m"}
    assert pl.from_arrow(out).filter(pl.col("id") == "b").height == 0  # one candidate: no pair


@pytest.mark.parametrize("filters, translator, message", [
    ({"select": "qe_mbr", "mbr_top_k": 1}, {}, "greater than or equal to 2"),
    ({"select": "qe_mbr", "mbr_top_k": 26}, {}, "more than the 25 candidates"),
    ({"select": "qe_mbr"}, {}, "needs mbr_top_k"),
    ({"select": "mbr", "mbr_top_k": 3}, {}, "only for select qe_mbr"),
    ({"select": "mbr"}, {"num_candidates": 1, "num_beams": 1}, "one candidate per unit"),
    ({"select": "mbr", "mbr_metric": "bleu"}, {}, "neither chrf nor"),
])
def test_bad_mbr_params_are_refused_by_the_params_model(filters, translator, message):
    with pytest.raises(ValidationError, match=message):
        TranslateParams(targets=["fr"], translator=translator, filters=filters)


def test_a_pool_s_candidates_count_together_and_translate_qa_refuses_mbr():
    pool = [{"backend": "m2m100", "num_beams": 2, "num_candidates": 2}, {"backend": "nllb", "num_beams": 2,
                                                                        "num_candidates": 2}]
    assert TranslateParams(targets=["fr"], translator=pool, filters={"select": "qe_mbr", "mbr_top_k": 4})
    with pytest.raises(ValidationError, match="translate-qa chooses by QE only"):
        TranslateQaParams(targets=["fr"], filters={"select": "mbr"})


def test_the_mbr_fields_at_their_defaults_leave_the_params_dump_as_it_was():
    assert "select" not in TranslateParams(targets=["fr"]).model_dump()["filters"]
    dumped = TranslateParams(targets=["fr"], filters={"select": "mbr"}).model_dump()["filters"]
    assert dumped["select"] == "mbr" and "mbr_metric" not in dumped
    assert TranslateParams.model_validate(TranslateParams(targets=["fr"], filters={
        "select": "qe_mbr", "mbr_top_k": 3}).model_dump()).filters.mbr_top_k == 3


def test_the_cli_refuses_bad_mbr_flags_in_one_line(capsys):
    from xmdata.cli import main

    assert main(["translate", "in.jsonl", "--targets", "fr", "--select", "qe_mbr", "--mbr-top-k", "1",
                 "--out", "o"]) == 2
    assert capsys.readouterr().err.strip().count("\n") == 0


def test_in_a_pool_pseudo_references_span_the_engines_and_a_tie_goes_to_the_engine_listed_first():
    from xmdata.schemas.translation import TRANSLATION_CANDIDATES

    rows = [{**cand("p", f"{engine}{rank}", rank, qe=0.5), "engine": engine} for engine in ("b:x", "a:y")
            for rank in (0, 1)]
    candidates = pa.Table.from_pylist(rows, schema=TRANSLATION_CANDIDATES.schema)
    pairs = [(h, r) for h in rows for r in rows if h is not r]
    # b:x #1 and a:y #0 agree most with the others, equally; the pool lists a:y second.
    score = {("b:x", 1): 80.0, ("a:y", 0): 80.0}
    utilities = pl.from_arrow(pa.Table.from_pylist([dict(
        id="p", column="caption", element=None, segment=0, source_text="src p", target_language="fr",
        engine=h["engine"], beam_rank=h["beam_rank"], ref_engine=r["engine"], ref_beam_rank=r["beam_rank"],
        utility=score.get((h["engine"], h["beam_rank"]), 10.0)) for h, r in pairs], schema=MBR_UTILITIES.schema))
    mbr = MbrSelection("mbr", None, utilities)
    chosen = shard_units(candidates, 0.5, None, ["b:x", "a:y"], mbr).row(0, named=True)
    assert (chosen["engine"], chosen["beam_rank"]) == ("b:x", 1)
    decided = pl.concat(mbr.decisions).row(0, named=True)
    assert decided["pseudo_references"] == 3
    assert (decided["runner_up_engine"], decided["runner_up_beam_rank"]) == ("a:y", 0)
