"""Every command that writes takes a URL (on the session's real S3 server): --out of the flows that
write files of their own (select-images, translate-qa), of import and evaluate, a release's --out
and --work, and models named by URL, fetched once into the model cache. A model URL that cannot be read, or a
URL --work a release's local steps cannot use, is refused in one line."""
import json
import os

import pytest
from support.cli_in_process import run_xmdata
from test_storage import local_files, s3_files

from xmdata.data import sample_path


def run(env, *args, quiet=True):
    result = run_xmdata([*args, *(["-q"] if quiet else [])], env)
    assert result.returncode == 0, result.stderr[-2000:]
    return result


def test_select_images_writes_its_selection_to_a_url_with_the_local_bytes(s3_env, s3, tmp_path):
    args = ["select-images", sample_path("images.csv"), "--per-language", "2", "--shards", "2"]
    run(s3_env, *args, "--out", tmp_path / "local")
    run(s3_env, *args, "--out", "s3://xmdata/select")
    remote = s3_files(s3, "xmdata/select")
    assert "selection_map.png" in remote and remote == local_files(tmp_path / "local")


def test_translate_qa_with_a_model_and_outputs_in_the_store(s3_env, s3, tiny_models, tmp_path):
    """The tiny MADLAD uploaded to the store and named by URL: fetched once (a second run reuses
    the copy), translating exactly as the local folder does, into outputs on the store."""
    s3.filesystem().put(tiny_models["madlad"].name_or_path, "xmdata/models/madlad", recursive=True)
    args = ["translate-qa", sample_path("mmeb.jsonl"), "--targets", "fr", "--backend", "madlad", "--shards", "1"]
    run(s3_env, *args, "--model", tiny_models["madlad"].name_or_path, "--out", tmp_path / "local")
    for _ in range(2):
        run(s3_env, *args, "--model", "s3://xmdata/models/madlad", "--out", "s3://xmdata/qa")
    copies = os.listdir(os.path.join(s3_env["XMDATA_CACHE"], "remote-models"))
    assert len([c for c in copies if not c.startswith(".")]) == 1  # one download, no half copy left
    remote, local = s3_files(s3, "xmdata/qa"), local_files(tmp_path / "local")
    for name in ("qa_parallel.parquet", "qa_counts.parquet", "qa_rejects.parquet", "qa_report.md"):
        assert remote[name] == local[name], name
    settings = json.loads(remote["translate_qa.json"])
    assert settings["translator"]["name_or_path"] == "s3://xmdata/models/madlad"  # recorded as named


@pytest.mark.parametrize("args, expected", [
    (["translate-qa", sample_path("mmeb.jsonl"), "--targets", "fr", "--backend", "madlad",
      "--model", "s3://xmdata/models/absent"], "madlad model s3://xmdata/models/absent: not found"),
    (["identify-language", sample_path("captions.jsonl"), "--lid-model", "s3://no-such-bucket/lid.bin"],
     "bucket 'no-such-bucket' does not exist"),
])
def test_a_model_url_that_cannot_be_read_is_refused_in_one_line(args, expected, s3_env, tmp_path):
    result = run_xmdata([*args, "--out", tmp_path / "out"], s3_env)
    assert result.returncode == 2 and expected in result.stderr, result.stderr
    assert result.stderr.count("\n") == 1 and not (tmp_path / "out").exists()


def test_a_release_built_and_written_on_the_store_has_the_local_release_hash_and_verifies(s3_env, s3, tmp_path):
    """--work and --out on the store: the release of a local build in a work folder outside the
    release (the manifest says whether the build sits inside it) — the same release_sha256 and
    files, the build in the store's work folder only, none uploaded with the release; `release
    verify` reads it there and catches an edited object."""
    config = tmp_path / "release.yaml"
    config.write_text(f"name: lid-only\nshards: 2\nlanguage_id: {{input: {sample_path('captions.jsonl')}}}\n")
    run(s3_env, "release", "--config", config, "--out", tmp_path / "local", "--work", tmp_path / "work")
    run(s3_env, "release", "--config", config, "--out", "s3://xmdata/release", "--work", "s3://xmdata/work")
    assert "xmdata/work/language_id/_done/shard-00001.json" in s3.filesystem().find("xmdata/work")
    manifest = json.loads(s3.filesystem().cat_file("xmdata/release/manifest.json"))
    expected = json.loads((tmp_path / "local" / "manifest.json").read_text())
    assert manifest["release_sha256"] == expected["release_sha256"]
    published = s3_files(s3, "xmdata/release")
    assert set(published) == set(expected["release"]["files"]) | {"manifest.json"}  # no build/ uploaded
    assert all(published[name] == (tmp_path / "local" / name).read_bytes() for name in expected["release"]["files"])
    verify = ["release", "verify", "s3://xmdata/release"]
    assert run_xmdata(verify, s3_env).returncode == 0
    edited_name = next(name for name in expected["release"]["files"] if name.startswith("data/"))
    s3.filesystem().pipe_file(f"xmdata/release/{edited_name}", b"edited")
    edited = run_xmdata(verify, s3_env)
    assert edited.returncode == 1 and f"{edited_name}: bytes" in edited.stderr


def test_a_release_with_steps_that_write_locally_refuses_a_work_url(s3_env, tmp_path):
    from xmdata.data import DATA_DIR

    result = run_xmdata(["release", "--config", os.path.join(DATA_DIR, "releases", "mmmeb.yaml"), "--sample",
                         "--models", "tiny", "--out", tmp_path / "out", "--work", "s3://xmdata/mmmeb-work"], s3_env)
    assert result.returncode == 2 and "imports, mmmeb step(s) write with local tools" in result.stderr
    assert result.stderr.count("xmdata: error") == 1 and "Traceback" not in result.stderr
    assert not (tmp_path / "out").exists()


def test_import_and_evaluate_write_to_a_url_with_the_local_bytes(s3_env, s3, tmp_path):
    source = sample_path("xm3600")
    imported = ["import", "xm3600", source, "--images", os.path.join(source, "images")]
    run(s3_env, *imported, "--out", tmp_path / "local", quiet=False)  # no -q: not a run command
    run(s3_env, *imported, "--out", "s3://xmdata/imported", quiet=False)
    remote = s3_files(s3, "xmdata/imported")
    for name in ("captions.parquet", "images.parquet", "rejects.parquet"):
        assert remote[name] == (tmp_path / "local" / name).read_bytes(), name
    stats = ["evaluate", "caption-stats"]
    run(s3_env, *stats, tmp_path / "local" / "captions.parquet", "--out", tmp_path / "stats", quiet=False)
    run(s3_env, *stats, "s3://xmdata/imported/captions.parquet", "--out", "s3://xmdata/stats", quiet=False)
    assert s3_files(s3, "xmdata/stats") == local_files(tmp_path / "stats")
