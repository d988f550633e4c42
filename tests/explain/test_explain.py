"""`xmdata explain`: a row's path through every stage of a small real build (tests/support/explain_build.py),
with and without its build folder; bad folders and unknown ids refused in one line, exit 2."""
import json
import os
import shutil

import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata
from support.explain_build import build_small_release, without_build


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    with pytest.MonkeyPatch.context() as env:
        env.setenv("XMDATA_EXECUTOR", "inprocess")  # the language ID shards in this process, no service
        return build_small_release(tmp_path_factory.mktemp("explain"))[0]


def explain(*args) -> dict:
    result = run_xmdata(["explain", *map(str, args), "--json"], dict(os.environ))
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def steps(trace: dict) -> dict:
    return {s["stage"]: s for s in trace["steps"]}


def test_a_translated_caption_shows_every_candidate_and_why_one_was_chosen(release):
    [trace] = explain(release, "c1")["traces"]
    assert trace["kind"] == "caption" and trace["input"]["text"] == "A brown dog runs across the green park."
    by = steps(trace)
    assert by["language_id"]["values"]["lid_label"] == "en" and by["language_id"]["model"][0]["ref"] == "lid.176"
    assert by["language_id"]["record"]["code_version"].endswith("/language_id-3")
    assert by["captions"]["reason"] == "another row with this id was refused: duplicate_id"  # the first row went on
    fr = by["select_translations -> fr"]
    assert fr["outcome"] == "kept" and fr["values"]["text"] == "fr-c1-0" and fr["params"]["min_lid_prob"] == 0.5
    verdicts = [c["verdict"] for c in fr["candidates"]]
    assert verdicts[0].startswith("chosen: best QE of the 2")
    assert verdicts[1].startswith("QE ties the chosen")  # 4e-6 better: a tie, the better beam rank wins
    assert verdicts[2] == "LID says en, not the target"
    assert verdicts[3].startswith("lid_prob 0.3000 < min_lid_prob 0.5")
    ar = by["select_translations -> ar"]
    assert (ar["outcome"], ar["reason"]) == ("rejected", "no_candidate_in_target_language")
    assert by["clip_score [c1@fr]"]["values"]["clip_score"] == pytest.approx(0.75)
    assert "clip_score [c1@ar]" not in by


def test_a_higher_qe_wins_and_a_rejected_caption_says_why(release):
    fr = steps(explain(release, "c2")["traces"][0])["select_translations -> fr"]
    assert fr["values"]["beam_rank"] == 1 and fr["candidates"][0]["verdict"] == "QE 0.200000 below the chosen 0.400000"
    by = steps(explain(release, "blank")["traces"][0])
    assert (by["language_id"]["outcome"], by["language_id"]["reason"]) == ("rejected", "empty_text")
    assert (by["translate"]["outcome"], by["translate"]["reason"]) == ("rejected", "empty_text")
    assert by["clip_score"]["outcome"] == "rejected"


def test_an_image_with_its_selection_level_and_one_without_gps(release):
    by = steps(explain(release, "i1")["traces"][0])
    assert by["geocode"]["values"]["country"] == "FR"
    levels = by["image_selection"]["values"]["level"]
    assert levels and set(levels.values()) <= {"region", "country", "continent", "global"}
    by = steps(explain(release, "i3")["traces"][0])
    assert (by["geocode"]["outcome"], by["geocode"]["reason"]) == ("rejected", "no_gps")
    assert by["image_selection"]["outcome"] == "rejected"


def test_a_scored_pair_and_qa_instances(release):
    [pair] = explain(release, "c2@fr")["traces"]
    assert pair["kind"] == "pair"
    by = steps(pair)
    assert by["select_translations -> fr"]["outcome"] == "kept"
    assert by["clip_score [c2@fr]"]["values"]["status"] == "ok"
    ok = steps(explain(release, "qa-ok")["traces"][0])
    assert ok["select_qa -> fr"]["values"]["query"]["target_text"] == "fr query"
    bad = steps(explain(release, "qa-bad")["traces"][0])
    assert (bad["select_qa -> fr"]["outcome"], bad["select_qa -> fr"]["reason"]) == ("rejected", "label_missing")
    assert bad["translate_qa"]["reason"] == "label_missing (fr)"


def test_the_text_form_is_one_block_per_stage(release):
    result = run_xmdata(["explain", release, "c1"], dict(os.environ))
    assert result.returncode == 0
    assert "  select_translations -> fr      kept     text='fr-c1-0'" in result.stdout
    assert "chosen: best QE of the 2 that passed LID" in result.stdout


def test_a_release_without_its_build_folder_says_what_its_tables_say(release, tmp_path):
    copy = without_build(release, tmp_path / "published")
    result = explain(copy, "c1")
    assert result["build"] is None and "build folder is gone" in result["notes"][0]
    by = steps(result["traces"][0])
    assert by["language_id"]["record"] is None and by["language_id"]["values"]["lid_label"] == "en"
    assert by["texts"]["reason"].endswith("duplicate_id")  # its rejects are published, its shards are not
    assert "texts" not in steps(explain(copy, "c2")["traces"][0])
    assert by["select_translations -> fr"]["candidates"][0]["verdict"].startswith("chosen")
    assert steps(explain(copy, "qa-bad")["traces"][0])["select_qa -> fr"]["reason"] == "label_missing"


@pytest.mark.parametrize("case", ["unknown id", "not a release", "another build"])
def test_bad_input_is_one_line_and_exit_2(release, tmp_path, case):
    args = {"unknown id": [release, "nope"], "not a release": [tmp_path, "c1"]}.get(case)
    if case == "another build":
        other = shutil.copytree(os.path.join(release, "build"), tmp_path / "other")
        (other / "summary.json").write_text('{"stages": {"captions": {}}}')
        args = [release, "c1", "--build", other]
    result = run_xmdata(["explain", *map(str, args)], dict(os.environ))
    assert result.returncode == 2 and result.stdout == ""
    assert len(result.stderr.strip().splitlines()) == 1 and "Traceback" not in result.stderr
    expected = {"unknown id": "nope: no such id in", "not a release": "neither a release",
                "another build": "belong to another build"}[case]
    assert expected in result.stderr
    if case == "unknown id":
        assert "searched: captions" in result.stderr


def test_a_folder_whose_path_has_glob_characters_is_read_as_it_is(release, tmp_path):
    copy = tmp_path / "rel[1]*?"
    shutil.copytree(release, copy)
    shutil.rmtree(copy / "build", ignore_errors=True)
    shutil.copytree(os.path.join(release, "build"), copy / "build")
    by = steps(explain(copy, "c1")["traces"][0])
    assert by["language_id"]["values"]["lid_label"] == "en" and by["language_id"]["record"]["params_hash"]
    page = run_xmdata(["explore", str(copy), "--no-serve"], dict(os.environ))
    assert page.returncode == 0 and page.stdout.strip().endswith("explore/index.html"), page.stderr


def test_a_work_folder_alone_reads_its_own_params_and_records(release, tmp_path):
    """A command's --out (here a copy of the build, away from its release): the params the translation
    kept (translate.json), and each shard's record; a release's own build reads the release's config."""
    work = shutil.copytree(os.path.join(release, "build"), tmp_path / "work")
    result = explain(work, "c1")
    assert result["folder"] == str(work) and "without its release" in result["notes"][0]
    by = steps(result["traces"][0])
    assert by["translate"]["params"]["targets"] == ["fr", "ar"] and by["translate"]["model"][0]["backend"] == "m2m100"
    assert by["language_id"]["params"] is None and by["language_id"]["record"]["params_hash"]
    inside = steps(explain(os.path.join(release, "build"), "c1")["traces"][0])
    assert inside["language_id"]["model"][0]["ref"] == "lid.176"  # from the release's manifest


@pytest.mark.slow  # the session's demo release (built once per run): the real stages' folders
def test_the_demo_release_explains_every_kind_of_row(demo_release, tmp_path):
    by = steps(explain(demo_release, "cap-002")["traces"][0])
    assert by["language_id"]["values"]["lid_label"] == "en"
    ar, fr = by["select_translations -> ar"], by["select_translations -> fr"]
    assert ar["outcome"] == "kept" and sum(c["verdict"].startswith("chosen") for c in ar["candidates"]) == 1
    assert (fr["outcome"], fr["reason"]) == ("rejected", "no_candidate_in_target_language")
    assert by["clip_score [cap-002@ar]"]["values"]["status"] == "ok"
    assert steps(explain(demo_release, "cap-empty")["traces"][0])["language_id"]["reason"] == "empty_text"
    picked = pq.read_table(demo_release / "data" / "images.parquet").to_pylist()[0]  # one the selection chose
    image = steps(explain(demo_release, picked["image_id"])["traces"][0])
    assert image["geocode"]["values"]["country"] == picked["country"]
    assert image["image_selection"]["outcome"] == "kept" and image["image_selection"]["values"]["level"]
    assert steps(explain(demo_release, "img-bad-nogps")["traces"][0])["geocode"]["reason"] == "no_gps"
    [qa] = explain(demo_release, "coco-t2i-0")["traces"]
    assert qa["kind"] == "qa_instance" and steps(qa)["translate_qa"]["outcome"] == "rejected"
    copy = without_build(demo_release, tmp_path / "published")
    assert steps(explain(copy, "cap-002")["traces"][0])["select_translations -> ar"]["outcome"] == "kept"


def test_json_has_no_nan():
    from xmdata.commands.explain import _finite

    assert _finite({"a": [float("nan"), 1.5, {"b": float("inf")}], "c": "x"}) == {"a": [None, 1.5, {"b": None}], "c": "x"}
