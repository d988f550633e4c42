"""MBR through the CLI with the tiny models: a chrF build stores every (candidate, pseudo-reference)
utility, `select-translations` re-selects qe / qe_mbr from them with no model and refuses in one line
when they are not stored; the tiny reference COMET's utilities are the same bytes with the memo on,
off and served from it."""
import json
import shutil

import polars as pl
import pytest
from support.cli_in_process import run_xmdata
from support.memo_runs import parquet_bytes, run_shard

from xmdata.runtime.parquet_shards import read_parquet_shards
from xmdata.tasks.translation.select import select_translations

pytestmark = pytest.mark.slow
ROWS = [{"id": f"r{i}", "caption": f"The dog {i} runs in the house."} for i in range(6)]


def translate(source, out, models, env, *extra):
    result = run_xmdata(
        ["translate", str(source), "--columns", "caption", "--targets", "fr", "--model", models["m2m100"].name_or_path,
         "--qe-model", models["cometkiwi"].name_or_path, "--num-beams", "4", "--num-candidates", "4",
         "--lid-accept", "fr=fr,ar,as,ru", "--shards", "2", "--out", str(out), *extra], env)
    return result


@pytest.fixture(scope="module")
def mbr_run(tiny_models, cli_env, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("mbr")
    source = tmp / "captions.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    result = translate(source, tmp / "run", tiny_models, cli_env, "--select", "mbr")
    assert result.returncode == 0, result.stderr[-3000:]
    return tmp / "run", result.stdout


def test_an_mbr_build_stores_every_pair_and_chooses_the_highest_expected_utility(mbr_run):
    run, stdout = mbr_run
    assert "Selection: mbr (chrf utilities)" in stdout and "MBR ≠ QE" in stdout
    candidates = pl.read_parquet(run / "candidates.parquet").filter(pl.col("lid_match"))
    per_unit = candidates.group_by("id").len()
    utilities = pl.read_parquet(run / "mbr_utilities.parquet")
    assert utilities.height == sum(n * (n - 1) for n in per_unit["len"])  # N(N-1): no self-pairs
    expected = utilities.group_by("id", "beam_rank").agg(pl.col("utility").mean())
    best = expected.sort(["id", "utility", "beam_rank"], descending=[False, True, False]).group_by(
        "id", maintain_order=True).first()
    chosen = pl.read_parquet(run / "translations.parquet").select("id", "beam_rank")
    assert dict(chosen.iter_rows()) == dict(best.select("id", "beam_rank").iter_rows())
    report = json.loads((run / "translation_report.json").read_text())
    assert report["mbr"]["targets"]["fr"]["units_decided"] == len(ROWS)
    decisions = pl.read_parquet(run / "mbr_decisions.parquet")
    disagree = decisions.filter(pl.col("beam_rank") != pl.col("qe_beam_rank")).height
    assert report["mbr"]["targets"]["fr"]["disagree_with_qe"] == disagree


def test_select_translations_reselects_from_the_stored_utilities(mbr_run, cli_env, tmp_path):
    run, _ = mbr_run
    result = run_xmdata(["select-translations", run, "--select", "qe", "--out", tmp_path / "qe"], cli_env)
    assert result.returncode == 0, result.stderr
    by_qe = select_translations(pl.read_parquet(run / "candidates.parquet").to_arrow())
    assert pl.read_parquet(tmp_path / "qe" / "translations.parquet").equals(pl.from_arrow(by_qe))
    assert not (tmp_path / "qe" / "mbr_decisions.parquet").exists()

    result = run_xmdata(["select-translations", run, "--select", "qe_mbr", "--mbr-top-k", "2",
                         "--out", tmp_path / "k2"], cli_env)
    assert result.returncode == 0, result.stderr
    decisions = pl.read_parquet(tmp_path / "k2" / "mbr_decisions.parquet")
    assert decisions["pseudo_references"].to_list() == [1] * len(ROWS)  # k = 2: one pseudo-reference each

    result = run_xmdata(["select-translations", run, "--select", "qe_mbr", "--mbr-top-k", "5", "--out",
                         tmp_path / "k5"], cli_env)
    assert result.returncode == 2 and "more than the 4 candidates" in result.stderr


def test_a_run_without_utilities_is_refused_in_one_line(mbr_run, cli_env, tmp_path):
    run, _ = mbr_run
    copy = tmp_path / "qe_run"
    shutil.copytree(run, copy)
    settings = json.loads((copy / "translate.json").read_text())
    settings.pop("mbr_utilities")
    settings["params"]["filters"].pop("select")  # what a build with select qe wrote
    (copy / "translate.json").write_text(json.dumps(settings))
    result = run_xmdata(["select-translations", copy, "--select", "mbr"], cli_env)
    assert result.returncode == 2 and "it holds none (built with select qe)" in result.stderr
    assert result.stderr.strip().count("\n") == 0


def test_comet_utilities_are_the_same_bytes_memo_off_on_and_served(mbr_run, tiny_models, tmp_path):
    from xmdata.tasks.translation.mbr_utilities import mbr_spec, mbr_utilities_stage
    from xmdata.tasks.translation.params import TranslateParams

    run, _ = mbr_run
    filters = TranslateParams(targets=["fr"], filters={"select": "mbr", "mbr_metric": tiny_models["comet_ref"]
                                                       .name_or_path}).filters
    stage = mbr_utilities_stage(mbr_spec(filters), "m2m100:m2m100")
    shard = next(read_parquet_shards(str(run / "candidates.parquet"))).drop_columns(["engine"])
    off, _, _ = run_shard(stage, shard, None)
    on, _, first = run_shard(stage, shard, str(tmp_path / "memo"))
    served, _, second = run_shard(stage, shard, str(tmp_path / "memo"))
    assert parquet_bytes(off) == parquet_bytes(on) == parquet_bytes(served)
    assert first["comet_mbr"]["computed"] == off.num_rows > 0
    assert second["comet_mbr"]["served"] == off.num_rows and second["comet_mbr"].get("computed", 0) == 0
    assert set(pl.from_arrow(off)["ref_engine"]) == {"m2m100:m2m100"}


def test_a_metric_that_is_not_reference_based_is_refused_before_any_model_loads(tiny_models, cli_env, tmp_path):
    source = tmp_path / "in.jsonl"
    source.write_text(json.dumps(ROWS[0]) + "\n", encoding="utf-8")
    result = translate(source, tmp_path / "out", tiny_models, cli_env, "--select", "mbr", "--mbr-metric",
                       tiny_models["cometkiwi"].name_or_path)
    assert result.returncode == 2 and "not a reference-based one" in result.stderr
    assert not (tmp_path / "out" / "translate").exists()


def test_explain_shows_the_winner_s_expected_utility_and_the_runner_up_s(mbr_run, cli_env):
    run, _ = mbr_run
    decision = pl.read_parquet(run / "mbr_decisions.parquet").filter(pl.col("id") == "r1").row(0, named=True)
    result = run_xmdata(["explain", run, "r1"], cli_env)
    assert result.returncode == 0, result.stderr
    assert f"expected_utility: {decision['expected_utility']:.6g}" in result.stdout  # as explain prints floats
    assert f"runner_up_utility: {decision['runner_up_utility']:.6g}" in result.stdout
    assert f"#{decision['beam_rank']} " in result.stdout and "MBR's choice (expected utility" in result.stdout


def test_the_memo_key_leaves_out_the_engine_label_and_the_model_s_path(mbr_run, tiny_models, tmp_path):
    """MEMO_EXCLUDE: the same text from another engine label, and the same weights built in another
    folder (its files name their own models' folder), are the same (source, candidate, reference)
    work: served, not computed again."""
    from xmdata.models.tiny_comet_ref import build_tiny_comet_ref
    from xmdata.models.tiny_corpus import generate_sentences
    from xmdata.models.tiny_xlmr import build_tiny_xlmr
    from xmdata.tasks.translation.mbr_utilities import mbr_spec, mbr_utilities_stage
    from xmdata.tasks.translation.params import TranslateParams

    run, _ = mbr_run
    elsewhere = tmp_path / "models"
    moved = build_tiny_comet_ref(elsewhere / "comet_ref", build_tiny_xlmr(elsewhere / "xlm-roberta",
                                                                          generate_sentences(seed=0)), 0)
    shard = next(read_parquet_shards(str(run / "candidates.parquet"))).drop_columns(["engine"])
    counts = []
    for path, engine in ((tiny_models["comet_ref"].name_or_path, "m2m100:m2m100"), (str(moved), "nllb:other")):
        filters = TranslateParams(targets=["fr"], filters={"select": "mbr", "mbr_metric": path}).filters
        stage = mbr_utilities_stage(mbr_spec(filters), engine)
        kept, _, used = run_shard(stage, shard, str(tmp_path / "memo"))
        counts.append(used["comet_mbr"])
    assert counts[0].get("computed") == kept.num_rows
    assert counts[1].get("served") == kept.num_rows and not counts[1].get("computed")
