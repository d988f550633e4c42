"""Imported public layouts through the real stages that consume them: the score stage with the tiny
open_clip, then `evaluate` on the score run folder; the QA translation flow; a flow reading --map."""
from __future__ import annotations

import json

import polars as pl
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata
from PIL import Image

from xmdata.cli import main
from xmdata.tasks.evaluation.params import evaluate_options
from xmdata.tasks.evaluation.runner import run_metric
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.stage_params import ScoringParams
from xmdata.tasks.scoring.input import read_score_input

pytestmark = pytest.mark.slow


def test_valse_import_score_stage_and_evaluate_from_the_run_folder(tiny_models, prefect_server, tmp_path):
    data = {f"counting_test_{k}": {"dataset": "visual7w", "image_file": f"v7w_{k}.jpg", "caption": f"There are {k} dogs.",
                                   "foil": f"There are {k + 5} cats.", "linguistic_phenomena": "counting",
                                   "mturk": {"caption": 3, "foil": 0, "other": 0}} for k in range(3)}
    (tmp_path / "counting-hard.json").write_text(json.dumps(data))
    out = tmp_path / "valse"
    assert main(["import", "valse", str(tmp_path), "--out", str(out)]) == 0
    for k in range(2):  # the third image was never downloaded: its pairs are refused by the score stage
        (out / "visual7w").mkdir(exist_ok=True)
        Image.new("RGB", (32, 32), (40 * k, 200, 90)).save(out / "visual7w" / f"v7w_{k}.jpg")
    pairs = read_score_input(str(out / "pairs.parquet"))
    clip = tiny_models["open_clip"]
    stage = clip_score_stage(ScoringParams(clip_model=clip.name_or_path), clip, str(out))
    scores, rejects = stage.fn(pairs, stage.params)
    assert rejects.column("reason").to_pylist() == ["missing_image", "missing_image"]
    for kind, table in (("data", scores), ("rejects", rejects)):  # the score run's layout
        (tmp_path / "run" / "clip_score" / kind).mkdir(parents=True)
        pq.write_table(table, tmp_path / "run" / "clip_score" / kind / "shard-00000.parquet")
    report = run_metric("valse", evaluate_options("valse", str(tmp_path / "run"), str(tmp_path / "eval")))
    assert report.result["per_language"]["en"]["n"] == 2  # two whole items; the third left out, counted
    assert report.result["left_out"]["run"] == {"rejected_pairs": 2, "by_reason": {"missing_image": 2},
                                                "items_with_a_rejected_pair": 1}


def test_mmeb_train_import_into_the_qa_translation_keeps_every_image_path(tiny_models, cli_env, tmp_path):
    src = tmp_path / "MMEB-train" / "VisualNews_t2i"
    src.mkdir(parents=True)
    rows = [{"qry": f"Find an image that matches the caption: A rally number {k}.", "qry_image_path": "",
             "pos_text": "<|image_1|>\nRepresent the given image.", "pos_image_path": f"VisualNews_t2i/pos/{k}.jpg",
             "neg_text": "", "neg_image_path": f"VisualNews_t2i/neg/{k}.jpg"} for k in range(3)]
    pl.DataFrame(rows).write_parquet(src / "original-00000-of-00001.parquet")
    tables = tmp_path / "tables"
    assert main(["import", "mmeb-train", str(tmp_path / "MMEB-train"), "--out", str(tables)]) == 0
    out = tmp_path / "qa"
    result = run_xmdata(
        ["translate-qa", str(tables / "qa_input.parquet"), "--targets", "fr",
         "--model", tiny_models["madlad"].name_or_path, "--shards", "1", "--workers", "1", "--out", str(out)],
        cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert pl.read_parquet(out / "qa_counts.parquet")["instances"].sum() == 3
    parallel = pq.read_schema(out / "qa_parallel.parquet")  # the tiny model's output may all be refused
    assert {"qry_image_path", "pos_image_path", "neg_image_path", "split"} <= set(parallel.names)


def test_map_reaches_the_inputs_a_flow_reads(cli_env, tmp_path):
    captions = tmp_path / "captions.csv"
    captions.write_text("caption_id,caption\na,The weather is lovely today.\nb,Il fait beau aujourd'hui.\n")
    out = tmp_path / "lid"
    result = run_xmdata(
        ["identify-language", str(captions), "--map", "caption_id=id,caption=text",
         "--shards", "1", "--workers", "1", "--quiet", "--out", str(out)], cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    labels = pl.read_parquet(out / "language_id" / "data" / "shard-00000.parquet").sort("id")
    assert labels["lid_label"].to_list() == ["en", "fr"]


def test_release_config_columns_mapping_reaches_its_inputs(cli_env, tmp_path, monkeypatch):
    from xmdata.flows import release_preflight

    (tmp_path / "captions.csv").write_text("caption_id,caption,lang,image\na,The weather is lovely today.,en,i1\n")
    (tmp_path / "release.yaml").write_text("name: mapped\nshards: 1\n"
                                           "columns: {caption_id: id, caption: text, lang: language, image: image_id}\n"
                                           "language_id: {input: captions.csv}\n")
    checks = []
    check = release_preflight.preflight_release
    monkeypatch.setattr(release_preflight, "preflight_release", lambda config: checks.append(1) or check(config))
    result = run_xmdata(["release", "--config", str(tmp_path / "release.yaml"),
                         "--out", str(tmp_path / "release"), "--workers", "1", "--quiet"], cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert checks == [1]  # the flow took the CLI's check
    labelled = pl.read_parquet(tmp_path / "release" / "data" / "captions.parquet")
    assert labelled["id"].to_list() == ["a"] and labelled["lid_label"].to_list() == ["en"]
