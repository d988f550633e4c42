"""`xmdata translate --engine ctranslate2` end to end (Prefect, Dask, tiny models): the model is
converted once, in preflight, beside a copy of the checkpoint, and the run selects what the
transformers engine selects."""
import json
import shutil

import polars as pl
import pytest
from support.cli_in_process import run_xmdata
from support.engines import AGREEMENT, agreement

pytestmark = pytest.mark.slow
ROWS = [{"id": f"r{i}", "caption": f"The small dog {i} sees the red cat in the house."} for i in range(10)]


def translate(source, out, model, qe_model, env, *engine):
    result = run_xmdata(
        ["translate", str(source), "--columns", "caption", "--targets", "fr,ar",
         "--model", model, "--qe-model", qe_model, "--num-beams", "4", "--num-candidates", "2",
         "--lid-accept", "ar=ar,hi,bn,fa,ur", "--shards", "2", "--workers", "1", "--out", str(out), *engine], env)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.load(open(out / "translate.json"))


def test_ctranslate2_run_converts_once_and_selects_what_transformers_selects(tiny_models, cli_env, tmp_path):
    model = tmp_path / "m2m100"
    shutil.copytree(tiny_models["m2m100"].name_or_path, model)
    source = tmp_path / "captions.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in ROWS), encoding="utf-8")
    qe = tiny_models["cometkiwi"].name_or_path
    settings = translate(source, tmp_path / "ct2", str(model), qe, cli_env, "--engine", "ctranslate2",
                         "--compute-type", "float32")
    assert dict(settings["translator"]["options"]) == {"engine": "ctranslate2", "compute_type": "float32"}
    converted = [p for p in (tmp_path / "m2m100.ct2").iterdir() if p.is_dir()]  # and file-digests.json
    assert [p.name.endswith("-float32") for p in converted] == [True]
    translate(source, tmp_path / "hf", str(model), qe, cli_env)
    columns = ["id", "target_language", "status", "reason", "text"]
    ct2 = pl.read_parquet(tmp_path / "ct2" / "translations.parquet").select(columns).sort(["id", "target_language"])
    hf = pl.read_parquet(tmp_path / "hf" / "translations.parquet").select(columns).sort(["id", "target_language"])
    assert ct2.height == hf.height == len(ROWS) * 2
    assert ct2.select("id", "target_language").equals(hf.select("id", "target_language"))  # one row each
    assert agreement(ct2.rows(), hf.rows()) >= AGREEMENT  # status, reason and text: as the engines agree
    assert [p for p in (tmp_path / "m2m100.ct2").iterdir() if p.is_dir()] == converted  # nothing converted again
