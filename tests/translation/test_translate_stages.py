"""The translation stages on tiny real models: both backends, fastText on every candidate, COMETKiwi
on those in the target language; then the selection CLI, which must not load a model."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import polars as pl
import pyarrow as pa
import pytest

from xmdata.models.base import ModelSpec
from xmdata.tasks.translation.candidate_scores import candidate_lid_stage, candidate_qe_stage
from xmdata.tasks.translation.options import FilterOptions
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import translate_stage

INPUT = pa.table({
    "id": ["a", "b", "c", "d"],
    "caption": ["The dog runs in the house.", "   ", "A red cat\nsees the water 🐈\t", "הכלב רץ\u0007 בבית"],
    "refs": [["A dog runs.", "The small dog runs inside."], [], None, ["The child reads a book."]],
}, schema=pa.schema([("id", pa.string()), ("caption", pa.string()), ("refs", pa.list_(pa.string()))]))
GENERATION = dict(num_beams=6, num_candidates=3, batch_tokens=4096, max_new_tokens_ratio=1.0, max_new_tokens_extra=4)


def params(columns: list[str], targets: list[str], **translator) -> TranslateParams:
    return TranslateParams(columns=columns, targets=targets, translator={**GENERATION, **translator})


def run_stages(tiny_models, backend, **overrides):
    """fr accepts fr only; the untrained tiny translators write script salad, so ar accepts every
    label lid.176 gives their candidates (whatever the draw of their weights): QE runs on them."""
    translate = translate_stage(params(["caption", "refs"], ["fr", "ar"], **overrides), tiny_models[backend])
    candidates, rejects = translate.fn(INPUT, translate.params)
    unlabelled = candidate_lid_stage(tiny_models["fasttext"], {})
    given = unlabelled.fn(candidates, unlabelled.params)[0].column("lid_label_raw").drop_null().to_pylist()
    lid = candidate_lid_stage(tiny_models["fasttext"], {"fr": ["fr"], "ar": sorted(set(given))})
    labelled, _ = lid.fn(candidates, lid.params)
    qe = candidate_qe_stage(FilterOptions(qe_model=tiny_models["cometkiwi"].name_or_path).qe_spec())
    scored, _ = qe.fn(labelled, qe.params)
    return pl.from_arrow(scored), pl.from_arrow(rejects)


@pytest.mark.parametrize("backend", ["m2m100", "madlad"])
def test_both_backends_give_ranked_candidates_with_lid_and_qe(tiny_models, backend):
    scored, rejects = run_stages(tiny_models, backend)
    assert rejects.select("reason", "row_id").sort("row_id").rows() == [
        ("empty_text", "b"), ("empty_text", "b"), ("empty_text", "c")]  # blank caption, [] and null refs
    ok = scored.filter(pl.col("status") == "ok")
    units = ok.select("id", "column", "element").unique()
    assert units.height == 6  # a: caption + 2 refs, c: caption, d: caption + 1 ref
    per_unit = ok.group_by("id", "column", "element", "target_language").agg(
        pl.col("beam_rank").min(), pl.len(), pl.col("candidate").n_unique().alias("distinct"))
    assert (per_unit["beam_rank"] == 0).all() and (per_unit["len"] <= 3).all()
    assert (per_unit["len"] == per_unit["distinct"]).all()  # duplicates merged
    assert ok["lid_label"].null_count() == 0 and ok["lid_prob"].is_between(0, 1).all()
    assert ok.filter(pl.col("lid_match"))["qe_score"].null_count() == 0 and ok["lid_match"].any()
    assert ok.filter(~pl.col("lid_match"))["qe_score"].null_count() == ok.filter(~pl.col("lid_match")).height
    assert not ok["candidate"].str.contains(r"__[a-z]{2,3}__|<2[a-z]+>").any()  # language tokens stripped


def test_an_empty_shard_gives_empty_candidates_and_rejects(tiny_models):
    stage = translate_stage(params(["caption", "refs"], ["fr"]), tiny_models["m2m100"])
    candidates, rejects = stage.fn(INPUT.slice(0, 0), stage.params)
    assert (candidates.num_rows, rejects.num_rows) == (0, 0)


def test_too_long_texts_are_rejected_or_split_on_request(tiny_models):
    spec = tiny_models["m2m100"]
    # The tiny vocabulary cuts words small: one sentence is ~20 tokens, both ~40.
    short = ModelSpec(spec.backend, spec.name_or_path, options={"max_input_tokens": 30})
    long_text = pa.table({"id": ["x"], "caption": ["The dog runs in the house. The cat sees the water."]})
    stage = translate_stage(params(["caption"], ["fr"]), short)
    candidates, rejects = stage.fn(long_text, stage.params)
    assert rejects.column("reason").to_pylist() == ["too_long"]
    assert candidates.column("status").to_pylist() == ["too_long"]
    split = translate_stage(params(["caption"], ["fr"], split_sentences=True), short)
    candidates, rejects = split.fn(long_text, split.params)
    assert rejects.num_rows == 0 and set(candidates.column("segment").to_pylist()) == {0, 1}


def test_select_translations_cli_rethresholds_without_loading_a_model(tiny_models, tmp_path):
    from xmdata.runtime.atomic import write_parquet_atomic
    from xmdata.tasks.translation.outputs import write_run, write_selection

    scored, _ = run_stages(tiny_models, "m2m100")
    write_parquet_atomic(scored.to_arrow(), str(tmp_path / "candidates.parquet"))
    run = TranslateParams(columns=["caption", "refs"], targets=["fr", "ar"], translator=GENERATION,
                          filters={"min_lid_prob": 0.0})  # salad: lid.176 is rarely sure of its label
    write_run(str(tmp_path), run, ["refs"])  # translate.json, which select-translations reads
    first = write_selection(str(tmp_path), run, ["refs"])
    assert first["targets"]["fr"]["rows_out"] == 0 and first["targets"]["ar"]["rows_out"] > 0
    # A fresh process: new thresholds, new files, and neither torch nor a model library imported.
    code = ("import sys; from xmdata.cli import main; rc = main(['select-translations', sys.argv[1], "
            "'--min-lid-prob', '0.0', '--min-qe', '1e9', '--out', sys.argv[2]]); "
            "heavy = {'torch', 'transformers', 'comet', 'fasttext', 'open_clip'} & set(sys.modules); "
            "sys.exit(rc or (3 if heavy else 0))")
    result = subprocess.run([sys.executable, "-c", code, str(tmp_path), str(tmp_path / "strict")],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    report = json.load(open(tmp_path / "strict" / "translation_report.json"))
    assert report["thresholds"] == {"min_lid_prob": 0.0, "min_qe": 1e9}
    assert report["targets"]["ar"]["rows_out"] == 0
    assert report["targets"]["ar"]["rejected"]["below_min_qe"] == first["targets"]["ar"]["rows_out"]
    assert os.path.exists(tmp_path / "strict" / "qe_histogram.png")


def test_cli_refuses_unsupported_languages_and_missing_models_before_loading(tiny_models, tmp_path, capsys):
    from xmdata.cli import main

    source = tmp_path / "in.jsonl"
    source.write_text('{"id": "a", "caption": "A dog."}\n', encoding="utf-8")
    common = ["translate", str(source), "--columns", "caption", "--out", str(tmp_path / "out"),
              "--qe-model", tiny_models["cometkiwi"].name_or_path]
    assert main([*common, "--targets", "fr,xx", "--model", tiny_models["m2m100"].name_or_path]) == 2
    assert "does not support xx; supported: " in capsys.readouterr().err
    missing = tmp_path / "no-such-model"
    assert main([*common, "--targets", "fr", "--model", str(missing)]) == 2
    assert str(missing) in capsys.readouterr().err
    assert main([*common, "--targets", "fr", "--num-beams", "4", "--num-candidates", "5",
                 "--model", tiny_models["m2m100"].name_or_path]) == 2
    assert "must be <= num_beams" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()  # refused before anything was written


def test_a_qe_score_that_is_not_a_number_is_refused_not_ranked(monkeypatch):
    """NaN or inf from the estimator (a model fault) gets no score, so selection never chooses it,
    and is listed with its reason; finite scores and out-of-memory pairs are as before."""
    from xmdata.tasks.translation import candidate_scores

    class Estimator:
        def prepare(self, sources, candidates):
            return candidates

        def predict(self, batch, sizes=None):
            return [{"nan": float("nan"), "inf": float("inf"), "oom": None}.get(c, 0.5) for c in batch]

    monkeypatch.setattr(candidate_scores, "get_model", lambda kind, spec: Estimator())
    texts = ["fine", "nan", "inf", "oom", "english"]
    table = pa.table({"id": [f"q{i}" for i in range(5)], "source_text": texts, "candidate": texts,
                      "lid_match": [True, True, True, True, False], "qe_score": pa.nulls(5, pa.float32())})
    params = candidate_scores.CandidateQeShard(model=FilterOptions(qe_model="x").qe_spec())
    scored, rejects = candidate_scores.estimate_candidate_quality(table, params)
    assert scored.column("qe_score").to_pylist() == [0.5, None, None, None, None]
    assert sorted(zip(rejects.column("row_id").to_pylist(), rejects.column("reason").to_pylist())) == [
        ("q1", "qe_not_finite"), ("q2", "qe_not_finite"), ("q3", "out_of_memory")]
