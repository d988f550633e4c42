"""`xmdata translate-qa` end to end on the sample MMEB rows with the tiny MADLAD: every output, the
counts, and a rerun that finds every shard finished and rewrites identical bytes."""
import json

import polars as pl
import pytest
from support.cli_in_process import run_xmdata

from xmdata.data import sample_path

pytestmark = pytest.mark.slow


def translate_qa(out, models, env):
    result = run_xmdata(
        ["translate-qa", sample_path("mmeb.jsonl"), "--targets", "fr,de",
         "--model", models["madlad"].name_or_path, "--shards", "2", "--workers", "1", "--out", str(out)], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout, json.load(open(out / "run.json"))


def test_translate_qa_cli_counts_every_instance_and_resumes(tiny_models, cli_env, tmp_path):
    out = tmp_path / "qa"
    stdout, _ = translate_qa(out, tiny_models, cli_env)
    assert "| task | target_language |" in stdout
    counts = pl.read_parquet(out / "qa_counts.parquet")
    # 8 instances of 7 kept tasks (ChartQA, DocVQA left out) x 2 targets, each kept or refused with a reason
    assert counts["instances"].sum() == 16 and set(counts["task"]) == {
        "A-OKVQA", "OK-VQA", "MSCOCO_i2t", "MSCOCO_t2i", "ImageNet_1K", "VisualNews_t2i", "MSCOCO"}
    rejects = pl.read_parquet(out / "qa_rejects.parquet")
    kept = pl.read_parquet(out / "qa_parallel.parquet")
    assert rejects.height + kept.select("id", "target_language").unique().height == 16
    assert set(rejects["reason"]) <= {"label_missing", "colon_missing", "part_count_mismatch", "parts_reordered",
                                      "text_before_label", "empty_part", "label_leak", "placeholder_in_output",
                                      "empty_output", "too_long"}
    labels = json.load(open(out / "qa_labels.json"))["labels"]
    assert labels["de"]["answer"][0] == "Antwort" and labels["fr"]["source"] == "data/qa_labels.json"
    summary = json.load(open(out / "summary.json"))
    assert summary["distributions"]["QA input rows left out"] == {"excluded task": 2, "over per-task cap": 0}
    names = ["qa_candidates.parquet", "qa_parallel.parquet", "qa_rejects.parquet", "qa_counts.parquet",
             "qa_report.json", "summary.json"]
    first = {n: (out / n).read_bytes() for n in names}
    _, run = translate_qa(out, tiny_models, cli_env)
    assert run["qa_instances"]["shards_run"] == 0 and run["translate_qa"]["shards_run"] == 0
    assert {n: (out / n).read_bytes() for n in names} == first
