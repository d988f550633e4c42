"""End to end through the CLI, as a user runs it: Prefect server, Dask cluster, real fastText."""
import json
import os
import signal
import subprocess
import sys
import time

import polars as pl
import pytest

pytestmark = pytest.mark.slow
BIN = os.path.dirname(sys.executable)
SHARDS = "16"
VOLATILE = {"run.json", "prefect-server.log"}  # how a run went, not what it made


def run_demo(out, env, *extra):
    result = subprocess.run([os.path.join(BIN, "xmdata"), "demo", "--out", str(out), "--shards", SHARDS,
                             *extra], env=env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-3000:]
    return json.load(open(os.path.join(out, "run.json")))


def release_files(root):
    files = {}
    for folder, _, names in os.walk(root):
        for name in names:
            rel = os.path.relpath(os.path.join(folder, name), root)
            if name not in VOLATILE:
                files[rel] = open(os.path.join(folder, name), "rb").read()
    return files


@pytest.fixture(scope="module")
def reference_release(tmp_path_factory, cli_env):
    out = tmp_path_factory.mktemp("reference")
    run_demo(out, cli_env, "--workers", "2")
    return out


def test_demo_release_has_data_rejects_records_and_summary(reference_release):
    summary = json.load(open(reference_release / "summary.json"))
    assert summary["stages"]["captions"]["rejected"] == {"duplicate_id": 1, "empty_id": 1}
    assert summary["stages"]["language_id"]["rejected"] == {"empty_text": 1}
    labelled = pl.read_parquet(reference_release / "language_id" / "data" / "*.parquet")
    assert labelled.height == summary["stages"]["language_id"]["rows_out"] == 40
    by_id = dict(zip(labelled["id"], labelled["lid_label"]))
    assert by_id["cap-008"] == "fr" and by_id["cap-010"] == "de" and by_id["cap-021"] == "bn"
    rejects = pl.read_parquet(reference_release / "language_id" / "rejects" / "*.parquet")
    assert rejects.select("stage", "reason", "row_id").rows() == [("language_id", "empty_text", "cap-empty")]
    assert len(os.listdir(reference_release / "language_id" / "_done")) == int(SHARDS)


def test_demo_release_has_a_geo_diverse_selection(reference_release):
    summary = json.load(open(reference_release / "summary.json"))
    assert summary["stages"]["geocode"]["rejected"] == {"invalid_coordinates": 1, "no_gps": 1}
    selection = pl.read_parquet(reference_release / "selection.parquet")
    per_language = pl.read_parquet(reference_release / "selection_summary.parquet")
    assert per_language.height == 36 and per_language["shortfall"].sum() == 0
    assert selection.height == 36 * 5 and selection["image_id"].n_unique() == selection.height
    assert set(selection["level"]) <= {"region", "country", "continent", "global"}
    assert sum(summary["distributions"]["selection_level"].values()) == selection.height
    assert (reference_release / "selection_map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_release_translates_english_captions(reference_release):
    summary = json.load(open(reference_release / "summary.json"))
    assert summary["stages"]["translate"]["rejected"] == {"empty_text": 1}
    translations = pl.read_parquet(reference_release / "translations.parquet")
    assert translations.height == 12 * 3 and set(translations["target_language"]) == {"fr", "de", "ar"}
    candidates = pl.read_parquet(reference_release / "candidates.parquet")
    assert candidates.filter(pl.col("status") == "ok")["lid_label"].null_count() == 0
    scored = candidates.filter(pl.col("lid_match"))
    assert scored.height > 0 and scored["qe_score"].null_count() == 0  # COMETKiwi ran on what passed LID
    report = json.load(open(reference_release / "translation_report.json"))["targets"]
    kept = summary["distributions"]["translations kept per target"]
    assert kept == {t: r["rows_out"] for t, r in report.items()} and kept["ar"] > 0
    assert (reference_release / "qe_histogram.png").read_bytes()[:4] == b"\x89PNG"


def test_demo_release_scores_captions_and_translations_against_images(reference_release):
    summary = json.load(open(reference_release / "summary.json"))
    scores = pl.read_parquet(reference_release / "clip_score" / "data" / "*.parquet")
    kept = pl.read_parquet(reference_release / "translated.parquet")
    assert scores.height == summary["stages"]["pairs"]["rows_out"] == 41 + kept.height  # captions with a good id
    ok = scores.filter(pl.col("status") == "ok")
    assert ok.height == scores.height - 1 and ok["clip_score"].is_between(0, 2.5).all()
    assert set(scores.filter(pl.col("id").str.contains("@"))["language"]) == set(kept["target_language"])


def test_qa_rows_are_translated_or_refused_with_a_reason(reference_release):
    summary = json.load(open(reference_release / "summary.json"))
    assert summary["stages"]["translate_qa"]["rows_in"] == 8  # 10 sample rows, 2 in excluded tasks
    assert sum(summary["stages"]["translate_qa"]["rejected"].values()) == 8 * 2  # every instance × fr, de


def test_sigkill_mid_run_resumes_without_redoing_and_matches(reference_release, cli_env, tmp_path):
    out = tmp_path / "killed"
    done_dir = out / "language_id" / "_done"
    proc = subprocess.Popen([os.path.join(BIN, "xmdata"), "demo", "--out", str(out), "--shards", SHARDS,
                             "--workers", "1"], env=cli_env, start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while not (done_dir.exists() and len(os.listdir(done_dir)) >= 3):
        assert proc.poll() is None and time.monotonic() < deadline, "demo ended before it could be killed"
        time.sleep(0.01)
    os.killpg(proc.pid, signal.SIGKILL)  # the CLI, its Dask workers, everything in the session
    proc.wait()
    finished = len(os.listdir(done_dir))
    assert 0 < finished < int(SHARDS)

    run = run_demo(out, cli_env, "--workers", "1")
    assert run["language_id"]["shards_skipped"] == finished
    assert run["language_id"]["shards_run"] == int(SHARDS) - finished
    assert run["captions"]["shards_skipped"] == int(SHARDS)
    assert release_files(out) == release_files(reference_release)


def test_existing_scheduler_and_two_workers_give_the_same_release(reference_release, cli_env, tmp_path):
    from distributed import Client
    from xmdata.runtime.prefect_api import free_port, stop_process_group

    address = f"tcp://127.0.0.1:{free_port()}"
    dask = os.path.join(BIN, "dask")
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                               "--no-dashboard"], env=cli_env, start_new_session=True,
                              stderr=subprocess.DEVNULL)]
    try:
        time.sleep(1)
        procs += [subprocess.Popen([dask, "worker", address, "--nthreads", "1", "--no-dashboard",
                                    "--host", "127.0.0.1", "--local-directory", str(tmp_path / f"w{i}")],
                                   env=cli_env, start_new_session=True, stderr=subprocess.DEVNULL)
                  for i in range(2)]
        with Client(address, timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            run_demo(tmp_path / "remote", cli_env, "--dask-address", address)
            loads = client.run(lambda: (lambda r: (r.load_count, len(r._loaded)))(
                __import__("xmdata.models.registry").models.registry))
        assert release_files(tmp_path / "remote") == release_files(reference_release)
        # Each model (fastText, translator, COMETKiwi) loaded once per worker, not once per shard.
        assert all(count == distinct for count, distinct in loads.values())
        assert max(distinct for _, distinct in loads.values()) >= 2
    finally:
        for proc in reversed(procs):
            stop_process_group(proc)


def test_select_images_strict_reports_shortfall_and_keeps_outputs(cli_env, tmp_path):
    from xmdata.data import sample_path

    out = tmp_path / "strict"
    result = subprocess.run([os.path.join(BIN, "xmdata"), "select-images", sample_path("images.csv"),
                             "--per-language", "10", "--strategy", "optimal", "--within", "spread",
                             "--strict", "--out", str(out), "--shards", "4"],
                            env=cli_env, capture_output=True, text=True, timeout=900)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "shortfall per language" in result.stderr
    per_language = pl.read_parquet(out / "selection_summary.parquet")
    assert per_language["shortfall"].sum() == 36 * 10 - 300  # every one of the 300 images is used
    assert pl.read_parquet(out / "selection.parquet")["strategy"].unique().to_list() == ["optimal"]
