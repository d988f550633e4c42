"""A release whose translation and Q/A translation are pools of translators (M2M100 + NLLB-200, the
paper's checkpoints named and the tiny ones built with `--models tiny`), on the demo's sample captions
and MMEB rows: it builds, verifies, its candidates table holds both engines, each stage's rejects
are one table with an `engine` column (the layout the card and croissant describe), and it compares
equal to a copy of itself."""
import json
import shutil

import polars as pl
import pytest
from support.cli_in_process import run_xmdata

from xmdata.data import sample_path
from xmdata.tasks.release.manifest import verify_release

pytestmark = pytest.mark.slow

ENGINES = """  translator:
    - {backend: m2m100, model: facebook/m2m100_418M, num_beams: 2, num_candidates: 2, batch_size: 1}
    - {backend: nllb, model: facebook/nllb-200-distilled-600M, num_beams: 2, num_candidates: 2, batch_size: 1}
"""
CONFIG = f"""name: pool
shards: 2
translation:
  input: {sample_path("captions.jsonl")}
  columns: [text]
  targets: [fr, te]
{ENGINES}  filters: {{qe_model: "Unbabel/wmt22-cometkiwi-da", qe_batch_size: 4, min_lid_prob: 0.0,
            lid_accept: {{fr: [fr, ar, as, ru], te: [te, ar, as, ru]}}}}
qa_translation:
  input: {sample_path("mmeb.jsonl")}
  targets: [fr]
  per_task: 1
{ENGINES}"""


def test_a_release_with_pools_builds_verifies_and_compares_equal_to_its_copy(tmp_path, cli_env, tiny_models):
    (tmp_path / "release.yaml").write_text(CONFIG, encoding="utf-8")
    out = tmp_path / "out"
    result = run_xmdata(["release", "--config", tmp_path / "release.yaml", "--models", "tiny", "--out", out,
                         "--quiet"], cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert verify_release(str(out)) == []
    candidates = pl.read_parquet(out / "data" / "translation_candidates.parquet")
    engines = candidates["engine"].unique().sort().to_list()
    assert [e.partition(":")[0] for e in engines] == ["m2m100", "nllb"]
    assert dict(candidates.group_by("target_language").agg(pl.col("engine").n_unique()).iter_rows()) == {"fr": 2, "te": 1}
    # One rejects table a stage, whatever engine refused the row: no engines/ folder under rejects/.
    rejects = sorted(p.relative_to(out / "rejects").as_posix() for p in (out / "rejects").rglob("*.parquet"))
    assert "/" not in "".join(rejects) and {"translate.parquet", "translate_qa.parquet"} <= set(rejects)
    translate = pl.read_parquet(out / "rejects" / "translate.parquet")
    assert translate.columns == ["stage", "reason", "row_id", "value", "engine"]
    assert set(translate["stage"]) <= {"translate"} and set(translate["engine"]) <= set(engines)
    assert {"empty_text"} <= set(translate["reason"])  # the sample's blank caption, refused by each engine
    assert set(translate.filter(pl.col("reason") == "empty_text")["engine"]) == set(engines)
    files = json.load(open(out / "manifest.json"))["release"]["files"]
    croissant = json.dumps(json.load(open(out / "croissant.json")))
    assert "rejects/translate.parquet" in files and "(rejects/translate.parquet)" in croissant
    copy = tmp_path / "copy"
    shutil.copytree(out, copy, ignore=shutil.ignore_patterns("build"))
    compared = run_xmdata(["release", "compare", out, copy], cli_env)
    assert compared.returncode == 0, compared.stdout[-3000:] + compared.stderr[-3000:]
