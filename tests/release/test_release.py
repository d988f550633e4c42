"""Release pieces on tiny data: config validation, row order, manifest and verify, card header,
progress bar, prefect.yaml. The demo release itself is built in test_demo_build (slow)."""
import json
import os
import random

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata
import yaml

from xmdata.flows.release_config import load_release_config
from xmdata.flows.release_preflight import checked_release
from xmdata.schemas import ContractError
from xmdata.tasks.release.files import sorted_by_values
from xmdata.tasks.release.manifest import verify_release, write_manifest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def write_config(tmp_path, text):
    (tmp_path / "captions.jsonl").write_text('{"id": "a", "text": "hello"}\n')
    path = tmp_path / "release.yaml"
    path.write_text(text)
    return str(path)


def test_packaged_demo_config_loads_with_inputs_relative_to_it():
    release = load_release_config("demo", shards=3)
    config = release.config
    assert config.language_id.input.endswith(os.path.join("data", "sample", "captions.jsonl"))
    assert config.translation.translator.model == "tiny:m2m100" and config.translation.targets == ["fr", "de", "ar"]
    assert len(release.sha256) == 64 and "name: xmdata-demo" in release.text
    assert config.shards == 3 and release.overrides == {"shards": 3} and release.resolved is None


def test_config_errors_are_refused_before_anything_runs(tmp_path):
    with pytest.raises(ContractError, match="transltion"):  # a misspelt section is not ignored
        load_release_config(write_config(tmp_path, "name: x\ntransltion: {input: captions.jsonl}\n"))
    with pytest.raises(ContractError, match="input not found: language_id.input"):
        checked_release(write_config(tmp_path, "name: x\nlanguage_id: {input: nowhere.jsonl}\n"))
    with pytest.raises(ContractError, match="shards: Input should be greater than or equal to 1"):
        load_release_config(write_config(tmp_path, "name: x\n"), shards=0)  # an override is validated with the file
    with pytest.raises(ContractError, match="strategy"):
        load_release_config(write_config(
            tmp_path, "name: x\nimage_selection: {input: captions.jsonl, strategy: best}\n"))
    with pytest.raises(ContractError, match="no such file"):
        load_release_config(str(tmp_path / "missing.yaml"))
    config = load_release_config(write_config(tmp_path, "name: x\nlanguage_id: {input: captions.jsonl}\n")).config
    assert config.language_id.input == str(tmp_path / "captions.jsonl")


def test_rows_are_ordered_by_value_whatever_order_they_came_in():
    rows = [{"id": f"r{i % 7}", "target": random.Random(i).choice(["fr", "de", None]), "score": i * 0.5}
            for i in range(40)]
    shuffled = rows[:]
    random.Random(1).shuffle(shuffled)
    a, b = sorted_by_values(pa.Table.from_pylist(rows)), sorted_by_values(pa.Table.from_pylist(shuffled))
    assert a.equals(b) and a.column("id").to_pylist() == sorted(r["id"] for r in rows)
    empty = pa.table({"id": pa.array([], pa.string())})
    assert sorted_by_values(empty).num_rows == 0


def test_a_pools_stage_rejects_are_one_table_a_stage_with_the_engine_that_refused_each_row(tmp_path):
    from xmdata.schemas.tables import REJECTS_SCHEMA
    from xmdata.tasks.release.files import gather_rejects

    work, release = tmp_path / "work", tmp_path / "release"
    engines = [{"engine": "m2m100:tiny", "folder": "engines/m2m100-aaa"}, {"engine": "nllb:tiny", "folder": "engines/nllb-bbb"}]
    for engine, ids in zip(engines, (["b", "a"], ["a"])):
        folder = work / engine["folder"] / "translate" / "rejects"
        folder.mkdir(parents=True)
        pq.write_table(pa.table({"stage": ["translate"] * len(ids), "reason": ["empty_text"] * len(ids),
                                 "row_id": ids, "value": [None] * len(ids)}, schema=REJECTS_SCHEMA),
                       folder / "shard-00000.parquet")
    (work / "texts" / "rejects").mkdir(parents=True)
    pq.write_table(REJECTS_SCHEMA.empty_table(), work / "texts" / "rejects" / "shard-00000.parquet")
    (work / "translate.json").write_text(json.dumps({"engines": engines}))
    stages = ["texts", "engines/m2m100-aaa/translate", "engines/nllb-bbb/translate"]
    assert gather_rejects(str(work), str(release), stages) == ["texts", "translate"]
    assert sorted(os.listdir(release / "rejects")) == ["texts.parquet", "translate.parquet"]
    table = pq.read_table(release / "rejects" / "translate.parquet")
    assert table.column_names == ["stage", "reason", "row_id", "value", "engine"]
    assert list(zip(table["row_id"].to_pylist(), table["engine"].to_pylist())) == [
        ("a", "m2m100:tiny"), ("a", "nllb:tiny"), ("b", "m2m100:tiny")]  # in the order of their values
    assert pq.read_table(release / "rejects" / "texts.parquet").column_names == REJECTS_SCHEMA.names  # one engine's: as before


def make_release(root):
    pq.write_table(pa.table({"id": ["a", "b"], "x": [1, 2]}), root / "data.parquet")
    (root / "plots").mkdir()
    (root / "plots" / "p.png").write_bytes(b"\x89PNG fake")
    (root / "build").mkdir()
    (root / "build" / "shard.parquet").write_bytes(b"work in progress")
    return write_manifest(str(root), {"name": "t", "work_folder": "build"}, {"build"})


def test_manifest_hashes_facts_not_the_build_time_and_verify_finds_every_difference(tmp_path):
    manifest = make_release(tmp_path)
    body = manifest["release"]
    assert body["files"]["data.parquet"]["rows"] == 2 and "build/shard.parquet" not in body["files"]
    assert write_manifest(str(tmp_path), {"name": "t", "work_folder": "build"}, {"build"})["release_sha256"] \
        == manifest["release_sha256"]  # built_at is outside the hashed part
    assert verify_release(str(tmp_path)) == []
    (tmp_path / "build" / "shard.parquet").write_bytes(b"changed")  # the build folder is not released
    assert verify_release(str(tmp_path)) == []
    (tmp_path / "plots" / "p.png").write_bytes(b"\x89PNG faKe")
    (tmp_path / "data.parquet").write_bytes(b"not parquet at all")
    (tmp_path / "extra.txt").write_text("x")
    problems = verify_release(str(tmp_path))
    assert problems == ["extra.txt: not in the manifest", "data.parquet: bytes 18 != "
                        f"{body['files']['data.parquet']['bytes']} in the manifest",
                        "plots/p.png: sha256 " + problems[2].split("sha256 ")[1]]
    stored = json.loads((tmp_path / "manifest.json").read_text())
    stored["release"]["name"] = "edited"
    (tmp_path / "manifest.json").write_text(json.dumps(stored))
    assert "release_sha256 does not match" in verify_release(str(tmp_path))[0]


def test_cli_verify_exit_codes(tmp_path):
    make_release(tmp_path)
    ok = run_xmdata(["release", "verify", tmp_path], dict(os.environ))
    assert ok.returncode == 0 and "every file matches" in ok.stdout
    os.unlink(tmp_path / "data.parquet")
    bad = run_xmdata(["release", "verify", tmp_path], dict(os.environ))
    assert bad.returncode == 1 and "data.parquet: missing" in bad.stderr
    usage = run_xmdata(["release", "--out", tmp_path], dict(os.environ))
    assert usage.returncode == 2 and "--config" in usage.stderr


def test_card_header_is_huggingface_yaml_with_a_config_per_table():
    from xmdata.tasks.release.card import header

    text = header(load_release_config("demo").config, {"captions": "c", "translations": "t"}, ["ar", "en"], 1500)
    meta = yaml.safe_load(text.split("---\n")[1])
    assert meta["license"] == "cc0-1.0" and meta["language"] == ["ar", "en"] and meta["size_categories"] == ["1K<n<10K"]
    assert meta["configs"][1] == {"config_name": "translations",
                                  "data_files": [{"split": "test", "path": "data/translations.parquet"}]}
    assert meta["task_categories"] == ["image-to-text", "text-to-image", "translation"]


def test_the_card_counts_captions_by_lid_label_where_the_input_declared_no_language():
    import polars as pl

    from xmdata.tasks.release.card import caption_section

    captions = pl.DataFrame({"id": ["a", "b", "c"], "text": ["One dog.", "Un chien.", "No image."],
                             "language": [None, None, None], "image_id": ["i1", "i1", None],
                             "lid_label": ["en", "fr", "en"]}, schema_overrides={"language": pl.String})
    section = caption_section(captions)
    assert "| en | 1 |" in section and "| fr | 1 |" in section and "agrees" not in section
    assert caption_section(captions.with_columns(pl.lit(None, pl.String).alias("image_id"))) == ""


def test_progress_bar_shows_shards_and_rows_per_second_unless_quiet(monkeypatch, capsys):
    from xmdata.runtime.progress import PROGRESS_ENV, ShardProgress

    monkeypatch.setenv(PROGRESS_ENV, "1")
    progress = ShardProgress("language_id", total=4, already_done=1)
    for _ in range(3):
        progress.shard_done({"rows_in": 10})
    progress.close()
    err = capsys.readouterr().err
    assert "4/4" in err and "rows/s" in err and "language_id" in err
    monkeypatch.setenv(PROGRESS_ENV, "0")
    quiet = ShardProgress("language_id", total=4, already_done=0)
    quiet.shard_done({"rows_in": 10})
    quiet.close()
    assert capsys.readouterr().err == ""


def test_prefect_yaml_declares_every_flow_and_an_inactive_nightly_release():
    from xmdata.serve import load_deployments

    spec = yaml.safe_load(open(os.path.join(ROOT, "prefect.yaml")))
    entrypoints = {d["entrypoint"].rsplit(".", 1)[0] for d in spec["deployments"]}
    assert entrypoints == {f"xmdata.flows.{m}" for m in
                           ("release", "language_id", "select_images", "translate", "translate_qa", "score", "download_images",
                            "evaluate", "train_distill", "train_clipscore", "publish")}
    by_name = {d.name: d for d in load_deployments(os.path.join(ROOT, "prefect.yaml"), activate_schedules=False)}
    release = by_name["demo-release"]
    assert [(s.schedule.cron, s.active) for s in release.schedules] == [("0 3 * * *", False)]
    assert release.entrypoint == "xmdata.flows.release.release_flow"
    from prefect.utilities.callables import parameter_schema

    from xmdata.flows.release import release_flow

    properties = parameter_schema(release_flow).properties  # the UI's form of the flow that entrypoint names
    assert properties["shards"]["description"].startswith("override the config") and properties["config"]["default"] == "demo"
    from xmdata.flows.publish import publish_flow

    form = parameter_schema(publish_flow).properties  # the token is never a parameter of the form
    assert set(form) == {"release", "repo_id", "options"} and "token" not in json.dumps(form).lower()
    active = {d.name: d for d in load_deployments(os.path.join(ROOT, "prefect.yaml"), activate_schedules=True)}
    assert [s.active for s in active["demo-release"].schedules] == [True]


def _module_state() -> dict:
    """Every global of the release modules and the CLI's commands (not their submodules), with the
    contents of containers: what one run could leave for the next."""
    import sys
    import types

    modules = {n: m for n, m in list(sys.modules.items())
               if n.startswith(("xmdata.flows.release", "xmdata.tasks.release")) or n == "xmdata.commands"}
    return {(n, k): (id(v), repr(v) if isinstance(v, (set, list, dict)) else None)
            for n, m in modules.items() for k, v in vars(m).items()
            if not k.startswith("__") and not isinstance(v, types.ModuleType)}


@pytest.mark.slow  # two release builds (one shard of language ID each)
def test_a_release_is_checked_once_per_command_and_the_cli_hands_the_flow_what_it_checked(
        cli_env, prefect_server, tmp_path, monkeypatch):
    from xmdata.flows import release_preflight
    from xmdata.flows.release import release_flow

    config = write_config(tmp_path, "name: x\nshards: 1\nlanguage_id: {input: captions.jsonl}\n")
    (tmp_path / "captions.jsonl").write_text(
        '{"id": "a", "text": "The weather is lovely today.", "language": "en", "image_id": "i1"}\n')
    calls = {"load": 0, "preflight": 0}
    load, preflight = release_preflight.load_release_config, release_preflight.preflight_release
    monkeypatch.setattr(release_preflight, "load_release_config",
                        lambda *a: calls.__setitem__("load", calls["load"] + 1) or load(*a))
    monkeypatch.setattr(release_preflight, "preflight_release",
                        lambda c: calls.__setitem__("preflight", calls["preflight"] + 1) or preflight(c))
    import xmdata.flows.release_build  # noqa: F401  (every release module loaded before the snapshot)

    before = _module_state()
    result = run_xmdata(["release", "--config", config, "--out", tmp_path / "cli", "--workers", "1", "--quiet"],
                        cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert calls == {"load": 1, "preflight": 1}  # the config read and its inputs checked once, by the CLI
    after = _module_state()
    assert {k: after.get(k) for k in before} == before  # nothing left at module level for the flow
    assert not [k for k in after if k not in before and k[0] in {n for n, _ in before}]
    release_flow(config=config, out=str(tmp_path / "python"))  # the UI's and Python's door checks for itself
    assert calls == {"load": 2, "preflight": 2}
    cli, python = (json.loads((tmp_path / d / "manifest.json").read_text()) for d in ("cli", "python"))
    assert cli["release_sha256"] == python["release_sha256"]


def test_every_language_column_of_the_demo_release_holds_the_one_code_system(demo_release):
    """XM3600 writes Hebrew `iw`: the selection tables say `he`, as the captions and scores do, so that a
    join of images and captions by language keeps Hebrew."""
    import pyarrow.parquet as pq
    from support.language_columns import language_code_problems

    assert not language_code_problems(demo_release), language_code_problems(demo_release)
    languages = set(pq.read_table(demo_release / "data" / "images_per_language.parquet").column("language").to_pylist())
    assert "he" in languages and "iw" not in languages
