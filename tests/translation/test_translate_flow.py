"""The translation flow end to end through the CLI: Prefect, Dask, the tiny models; and a run that
stopped between shards finishing only what was missing, with identical bytes."""
import json
import os

import polars as pl
import pytest
from support.cli_in_process import run_xmdata

pytestmark = pytest.mark.slow
ROWS = [{"id": f"r{i}", "caption": f"The dog {i} runs in the house.", "refs": ["A small dog sits.", "A small dog runs."]}
        for i in range(12)] + [{"id": "blank", "caption": " ", "refs": ["A cat."]}]


def translate(source, out, models, env):
    result = run_xmdata(
        ["translate", str(source), "--columns", "caption,refs", "--targets", "fr,ar",
         "--model", models["m2m100"].name_or_path, "--qe-model", models["cometkiwi"].name_or_path,
         "--num-beams", "4", "--num-candidates", "2", "--lid-accept", "ar=ar,hi,bn,fa,ur",
         "--shards", "4", "--workers", "1", "--out", str(out)], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout, json.load(open(out / "run.json"))


def outputs(root):
    names = ["candidates.parquet", "translations.parquet", "translated.parquet", "translation_report.json",
             "summary.json", "translation_rejects.parquet"]
    return {name: (root / name).read_bytes() for name in names}


def test_translate_cli_builds_every_output_and_resumes_only_missing_shards(tiny_models, cli_env, tmp_path):
    source = tmp_path / "captions.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    out = tmp_path / "run"
    stdout, _ = translate(source, out, tiny_models, cli_env)
    assert "| ar |" in stdout and "acceptance" in stdout  # the report is printed
    first = outputs(out)
    translations = pl.read_parquet(out / "translations.parquet")
    assert translations.height == (12 * 3 + 2) * 2  # every id × (caption + refs) × target, kept or not
    assert translations.filter(pl.col("id") == "blank", pl.col("column") == "caption")["reason"].to_list() == [
        "empty_text", "empty_text"]
    assert pl.read_parquet(out / "translated.parquet")["refs"].list.len().unique().to_list() == [2]

    # What a crash leaves: two shards of the last stage and one of the first without completion
    # records, and a half-written temp file.
    for stage, index in [("candidate_qe", 0), ("candidate_qe", 2), ("translate", 1)]:
        os.unlink(out / stage / "_done" / f"shard-{index:05d}.json")
    (out / "translate" / "data" / ".tmp-x.part").write_bytes(b"half")
    _, run = translate(source, out, tiny_models, cli_env)
    assert run["texts"]["shards_run"] == 0 and run["translate"]["shards_run"] == 1
    assert run["candidate_lid"]["shards_run"] == 0  # its input came out byte-identical
    assert run["candidate_qe"]["shards_run"] == 2
    assert not (out / "translate" / "data" / ".tmp-x.part").exists()
    assert outputs(out) == first
