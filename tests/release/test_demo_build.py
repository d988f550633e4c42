"""End to end through the CLI, as a user runs it: Prefect server, Dask cluster, real fastText."""
import json
import os
import signal
import subprocess
import time

import polars as pl
import psutil
import pytest
from support.cli_in_process import run_xmdata
from support.demo_release import BIN, OTHER_KERNELS, SHARDS, release_files, run_demo
from support.shard_folders import finished_shards

from xmdata.runtime.folder_lock import LOCK_NAME

pytestmark = pytest.mark.slow


def commands_forked_for(folder) -> list:
    """The command a client handed to the service's command process (service/command_server.py), found
    by the folder it runs in (the client's), with its own children (its LocalCluster): the processes
    a kill -9 of the client must take with it, as it took the command's own process before."""
    from xmdata.service.client import command_process
    from xmdata.service.service_files import INFO_NAME

    path = command_process()
    if path is None:
        return []
    server = json.loads(open(os.path.join(os.path.dirname(path), INFO_NAME)).read())["pid"]
    def runs_in(proc) -> bool:
        try:
            return proc.cwd() == str(folder)
        except psutil.Error:  # another command's fork, ended meanwhile
            return False

    forks = [p for p in psutil.Process(server).children() if runs_in(p)]
    return forks + [child for fork in forks for child in fork.children(recursive=True)]


@pytest.fixture(scope="module")
def reference_release(demo_release):
    return demo_release


@pytest.fixture(scope="module")
def reference_build(reference_release):
    return reference_release / "build"


def test_demo_release_has_data_rejects_records_and_summary(reference_build):
    summary = json.load(open(reference_build / "summary.json"))
    assert summary["stages"]["captions"]["rejected"] == {"duplicate_id": 1, "empty_id": 1}
    assert summary["stages"]["language_id"]["rejected"] == {"empty_text": 1}
    labelled = pl.read_parquet(reference_build / "language_id" / "data" / "*.parquet")
    assert labelled.height == summary["stages"]["language_id"]["rows_out"] == 40
    by_id = dict(zip(labelled["id"], labelled["lid_label"]))
    assert by_id["cap-008"] == "fr" and by_id["cap-010"] == "de" and by_id["cap-021"] == "bn"
    rejects = pl.read_parquet(reference_build / "language_id" / "rejects" / "*.parquet")
    assert rejects.select("stage", "reason", "row_id").rows() == [("language_id", "empty_text", "cap-empty")]
    assert finished_shards(reference_build / "language_id" / "_done") == int(SHARDS)


def test_demo_release_has_a_geo_diverse_selection(reference_build):
    summary = json.load(open(reference_build / "summary.json"))
    assert summary["stages"]["geocode"]["rejected"] == {"invalid_coordinates": 1, "no_gps": 1}
    selection = pl.read_parquet(reference_build / "selection.parquet")
    per_language = pl.read_parquet(reference_build / "selection_summary.parquet")
    assert per_language.height == 36 and per_language["shortfall"].sum() == 0
    assert selection.height == 36 * 5 and selection["image_id"].n_unique() == selection.height
    assert set(selection["level"]) <= {"region", "country", "continent", "global"}
    assert sum(summary["distributions"]["selection_level"].values()) == selection.height
    assert (reference_build / "selection_map.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_demo_release_translates_english_captions(reference_build):
    summary = json.load(open(reference_build / "summary.json"))
    assert summary["stages"]["translate"]["rejected"] == {"empty_text": 1}
    translations = pl.read_parquet(reference_build / "translations.parquet")
    assert translations.height == 12 * 3 and set(translations["target_language"]) == {"fr", "de", "ar"}
    candidates = pl.read_parquet(reference_build / "candidates.parquet")
    assert candidates.filter(pl.col("status") == "ok")["lid_label"].null_count() == 0
    scored = candidates.filter(pl.col("lid_match"))
    assert scored.height > 0 and scored["qe_score"].null_count() == 0  # COMETKiwi ran on what passed LID
    report = json.load(open(reference_build / "translation_report.json"))["targets"]
    kept = summary["distributions"]["translations kept per target"]
    assert kept == {t: r["rows_out"] for t, r in report.items()} and kept["ar"] > 0
    assert (reference_build / "qe_histogram.png").read_bytes()[:4] == b"\x89PNG"


def test_demo_release_scores_captions_and_translations_against_images(reference_build):
    summary = json.load(open(reference_build / "summary.json"))
    scores = pl.read_parquet(reference_build / "clip_score" / "data" / "*.parquet")
    kept = pl.read_parquet(reference_build / "translated.parquet")
    assert scores.height == summary["stages"]["pairs"]["rows_out"] == 41 + kept.height  # captions with a good id
    ok = scores.filter(pl.col("status") == "ok")
    assert ok.height == scores.height - 1 and ok["clip_score"].is_between(0, 2.5).all()
    assert set(scores.filter(pl.col("id").str.contains("@"))["language"]) == set(kept["target_language"])
    # A translation is paired with its source caption's image: the kept (first) row of a repeated id.
    image_of = dict(scores.filter(~pl.col("id").str.contains("@")).select("id", "image_id").iter_rows())
    translated = scores.filter(pl.col("id").str.contains("@")).select("id", "image_id").iter_rows()
    assert all(image == image_of[i.split("@")[0]] for i, image in translated)
    assert image_of["cap-000"] == "img-0008"  # its repeat (img-0002) is refused as duplicate_id


def test_qa_rows_are_translated_or_refused_with_a_reason(reference_build):
    summary = json.load(open(reference_build / "summary.json"))
    assert summary["stages"]["translate_qa"]["rows_in"] == 8  # 10 sample rows, 2 in excluded tasks
    assert sum(summary["stages"]["translate_qa"]["rejected"].values()) == 8 * 2  # every instance × fr, de


def test_sigkill_mid_run_resumes_without_redoing_and_matches(reference_release, cluster_env, tmp_path):
    """SIGKILL of the CLI alone (not its process group): its LocalCluster's workers must go with it,
    and the rerun (small stages in-process, model stages on the service's warm cluster) finishes
    only what is missing, byte for byte as the all-in-process build."""
    out = tmp_path / "killed"
    done_dir = out / "build" / "language_id" / "_done"
    command = [os.path.join(BIN, "xmdata"), "demo", "--out", str(out), "--shards", SHARDS, "--workers", "1",
               "--executor", "dask"]
    here = tmp_path / "cwd"
    here.mkdir()
    proc = subprocess.Popen(command, env=cluster_env, start_new_session=True, cwd=here,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 600
    while finished_shards(done_dir) < 3:
        assert proc.poll() is None and time.monotonic() < deadline, "demo ended before it could be killed"
        time.sleep(0.01)
    children = psutil.Process(proc.pid).children(recursive=True) or commands_forked_for(here)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert children  # its worker (and the worker's nanny process)
    gone, alive = psutil.wait_procs(children, timeout=30)
    assert not alive, f"left running after kill -9 of the command: {alive}"
    finished = finished_shards(done_dir)  # once nothing of the command runs
    assert 0 < finished < int(SHARDS)
    assert (out / LOCK_NAME).exists()  # the killed command's lock, left behind: the rerun takes it over

    run = run_demo(out, cluster_env)  # as a user reruns it: auto, on the service's warm cluster
    assert run["language_id"]["shards_skipped"] == finished
    assert run["language_id"]["shards_run"] == int(SHARDS) - finished
    assert run["language_id"]["where"] == "in-process" and run["clip_score"]["where"] == "cluster"
    # translate ran beside language_id (release_build.independent_parts): it may have finished before the kill
    assert run["translate"]["where"] == "cluster" or run["translate"]["shards_run"] == 0
    assert run["captions"]["shards_skipped"] == int(SHARDS)
    assert release_files(out) == release_files(reference_release)
    assert not list(out.rglob(".tmp-*.part"))  # what the kill left half-written was cleared
    assert not list(out.rglob(LOCK_NAME))  # the rerun let go of what it took over


def test_an_existing_scheduler_with_workers_on_other_cpu_kernels_builds_the_same_release(
        reference_release, cluster_env, tmp_path):
    """A secured cluster of the user's own — a `dask scheduler` speaking mutual TLS, an `xmdata worker`
    (one: a second cost its own imports and model loads, ~15 CPU-s, and proved nothing more) — given
    to the demo with the three certificate files; a client without them is refused. The command
    and its worker run under other CPU math kernels (what another machine's CPU does to
    torch, oneDNN, MKL and OpenBLAS) and build their own tiny models, in a cache of their own, as
    another machine does: `xmdata release compare` finds the same models (the same bytes), rows,
    ids, texts and decisions as the in-process release, numbers within the tolerance. (Byte
    equality of a cluster build: the SIGKILL test above.)"""
    from distributed import Client

    from xmdata.runtime.owner_only import new_dask_credentials
    from xmdata.runtime.prefect_api import free_port, stop_process_group

    # Processes of their own (kernels are chosen when torch loads), their tiny models built anew.
    other = {**cluster_env, **OTHER_KERNELS, "XMDATA_CACHE": str(tmp_path / "cache")}
    tls = new_dask_credentials("test-cluster").write(str(tmp_path / "tls"))
    address = f"tls://127.0.0.1:{free_port()}"
    dask = os.path.join(BIN, "dask")
    procs = [subprocess.Popen([dask, "scheduler", "--host", "127.0.0.1", "--port", address.rsplit(":", 1)[1],
                               "--protocol", "tls", "--no-dashboard", *tls.worker_flags()], env=cluster_env,
                              start_new_session=True, stderr=subprocess.DEVNULL)]
    out = tmp_path / "remote"
    try:
        time.sleep(1)
        procs += [subprocess.Popen([os.path.join(BIN, "xmdata"), "worker", address, *tls.worker_flags()],
                                   env=other, start_new_session=True, stderr=subprocess.DEVNULL)]
        with Client(address, security=tls.security(), timeout=60) as client:
            client.wait_for_workers(1, timeout=120)
            # no certificate: the scheduler does not talk to it (resets the plain TCP, or never answers)
            with pytest.raises(OSError, match="Connection reset by peer|Timed out trying to connect"):
                Client(address.replace("tls://", "tcp://"), timeout=5)
            build = subprocess.run([os.path.join(BIN, "xmdata"), "demo", "--out", str(out), "--shards", SHARDS,
                                    "-q", "--dask-address", address, *tls.worker_flags()],
                                   env=other, capture_output=True, text=True, timeout=900)
            assert build.returncode == 0, build.stderr[-3000:]
            loads = client.run(lambda: (lambda m: (m.load_count, len(m.loaded())))(
                __import__("xmdata.models.registry").models.registry.MODELS))
        # Each model (fastText, translator, COMETKiwi) loaded once per worker, not once per shard.
        assert all(count == distinct for count, distinct in loads.values())
        assert max(distinct for _, distinct in loads.values()) >= 2
    finally:
        for proc in reversed(procs):
            stop_process_group(proc)
        # the service the demo started under this test's own cache (its Prefect API) goes with the test
        subprocess.run([os.path.join(BIN, "xmdata"), "down"], env=other, capture_output=True, timeout=120)
    platform = json.load(open(out / "manifest.json"))["platform"]
    assert "default" in json.dumps(platform).lower()  # the record says which kernels built it
    assert list((tmp_path / "cache").glob("tiny-models-*/manifest.json"))  # its own tiny models
    compare = run_xmdata(["release", "compare", reference_release, out], cluster_env)
    assert compare.returncode == 0, compare.stdout[-2000:] + compare.stderr[-3000:]
    assert "the same" in compare.stdout


def test_select_images_strict_reports_shortfall_and_keeps_outputs(cli_env, tmp_path):
    from xmdata.data import sample_path

    out = tmp_path / "strict"
    result = run_xmdata(["select-images", sample_path("images.csv"), "--per-language", "10", "--strategy",
                         "optimal", "--within", "spread", "--strict", "--out", out, "--shards", "4"], cli_env)
    assert result.returncode == 1, result.stderr[-2000:]
    assert "shortfall per language" in result.stderr
    per_language = pl.read_parquet(out / "selection_summary.parquet")
    assert per_language["shortfall"].sum() == 36 * 10 - 300  # every one of the 300 images is used
    assert pl.read_parquet(out / "selection.parquet")["strategy"].unique().to_list() == ["optimal"]


def test_demo_release_verifies_and_loads_with_datasets_and_polars(reference_release, cli_env, tmp_path):
    import yaml

    result = run_xmdata(["release", "verify", reference_release], cli_env)
    assert result.returncode == 0 and "every file matches" in result.stdout, result.stderr
    manifest = json.load(open(reference_release / "manifest.json"))["release"]
    card = (reference_release / "README.md").read_text()
    header = yaml.safe_load(card.split("---\n")[1])
    assert header["license"] == "cc0-1.0" and {"en", "fr", "de", "ar"} <= set(header["language"])
    assert {"translation", "image-to-text"} <= set(header["task_categories"])
    # The card says how to look inside, and what it names is there and hashed.
    assert "`explore/index.html`" in card and "`xmdata explain DIR ID`" in card and "`croissant.json`" in card
    assert {"explore/index.html", "explore/data.js", "croissant.json"} <= set(manifest["files"])
    os.environ["HF_HUB_OFFLINE"] = "1"  # local files only; before datasets reads its config
    import datasets

    for config in header["configs"]:
        relative = config["data_files"][0]["path"]
        rows = manifest["files"][relative]["rows"]
        loaded = datasets.load_dataset("parquet", data_files={"test": str(reference_release / relative)},
                                       cache_dir=str(tmp_path / "hf"))["test"]
        assert loaded.num_rows == rows == pl.read_parquet(reference_release / relative).height, relative
    empty = [name for name, entry in manifest["files"].items() if entry.get("rows") == 0]
    assert "data/qa_parallel.parquet" in empty  # the tiny MADLAD's QA output is all refused
    assert not {c["data_files"][0]["path"] for c in header["configs"]} & set(empty)  # datasets cannot load those
    for plot in ("plots/selection_map.png", "plots/qe_histogram.png"):
        assert f"]({plot})" in card and plot in manifest["files"]
    assert "## Translation acceptance and QE" in card and "| ar | 12 | 11 |" in card
    models = {m["role"]: m for m in manifest["models"]}
    assert models["translation.translator"]["ref"] == "tiny:m2m100" and len(models["translation.translator"]["sha256"]) == 64
    assert manifest["packages"]["torch"] and manifest["config"]["text"].startswith("# The demo release")
    assert manifest["inputs"]["language_id.input"]["path"] == os.path.join("..", "sample", "captions.jsonl")
    assert not any(name.startswith("build") for name in manifest["files"])  # the work folder is not released


def test_verify_catches_a_tampered_release(reference_release, cli_env, tmp_path):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(reference_release, copy, ignore=shutil.ignore_patterns("build"))
    verify = ["release", "verify", copy]
    assert run_xmdata(verify, cli_env).returncode == 0
    target = copy / "data" / "translations.parquet"
    data = bytearray(target.read_bytes())
    data[len(data) // 2] ^= 0x01  # one bit, same size
    target.write_bytes(bytes(data))
    (copy / "rejects" / "geocode.parquet").unlink()
    result = run_xmdata(verify, cli_env)
    assert result.returncode == 1
    assert "data/translations.parquet: sha256" in result.stderr and "rejects/geocode.parquet: missing" in result.stderr
    assert "captions.parquet" not in result.stderr  # untouched files are not reported


def test_another_shard_plan_builds_the_same_release(reference_release, cli_env, tmp_path):
    """One shard at least and at most 100 rows a shard (XMDATA_SHARD_ROWS), against the reference's
    16: every caption in one shard, the 302 images in 4, other batch-mates for every model call. `release compare` finds the same rows, texts and decisions,
    numbers within 1e-6; the one difference is the manifest's record of the --shards asked for.
    (On the machine measured the data files were byte-identical; other CPU kernels may move a QE
    score by ~6e-8 with its place in a batch, tests/models/test_batch_independence.py.)"""
    out = tmp_path / "other-plan"
    built = run_xmdata(["demo", "--out", out, "--shards", "1", "-q"], {**cli_env, "XMDATA_SHARD_ROWS": "100"})
    assert built.returncode == 0, built.stderr[-3000:]
    assert finished_shards(out / "build" / "translate" / "_done") == 1
    assert finished_shards(out / "build" / "images" / "_done") == 4  # the rows cap made more
    compare = run_xmdata(["release", "compare", reference_release, out, "--tolerance", "1e-6"], cli_env)
    said = compare.stdout + compare.stderr
    assert "2 difference(s)" in said, said[-3000:]
    differences = [line for line in said.splitlines() if line.startswith(("manifest.json", "data/", "README", "croissant"))]
    assert [line.split(":")[1].strip().split(" ")[0] for line in differences] == [
        "release.config.effective_sha256", "release.config.overrides.shards"], said[-3000:]
