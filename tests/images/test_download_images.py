"""`download-images` against a real HTTP server on 127.0.0.1 (tests/support/image_server.py): every
fault of issue 32 gets its status, the outputs are readable, reruns skip finished shards,
--retry-failed fetches only transient rows, and a run killed with SIGKILL loses nothing and refetches
nothing finished. Runs the flow's function in this process (no Prefect server); the CLI's refusals
too, and one whole command (slow)."""
from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
import tarfile
import time

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from support.image_server import ImageServer, gps_jpeg, jpeg
from xmdata.cli import main
from xmdata.flows.download_images import download_images
from xmdata.runtime.session import execution_session
from xmdata.tasks.images.params import DownloadImagesParams, HttpOptions

FAST = HttpOptions(threads=8, retries=1, backoff=0.05, read_timeout=0.6, connect_timeout=2.0)
FAULTS = {"/img/a": "ok", "/missing": "http_404", "/flaky/b": "ok", "/busy/c": "ok", "/down/x": "http_5xx",
          "/slow": "timeout", "/redirect/d": "ok", "/loop/a": "redirect_loop", "/truncated": "truncated",
          "/html": "not_an_image", "/bomb": "decompression_bomb", "/huge": "too_large", "/noai/e": "robots_noai",
          "/img/a?again": "ok"}


@pytest.fixture
def server():
    images = {name: jpeg(seed) for seed, name in enumerate("abcde")}
    served = ImageServer(images, slow_s=2.0)
    yield served
    served.close()


def write_urls(path, server, paths) -> str:
    pq.write_table(pa.table({"url": [server.url + p for p in paths], "caption": [f"caption {p}" for p in paths],
                             "n": list(range(len(paths)))}), path)
    return str(path)


def run(source, out, params: DownloadImagesParams, shards: int = 2, retry_failed: bool = False) -> pl.DataFrame:
    with execution_session("inprocess"):
        download_images(source, str(out), shards, params, retry_failed)
    return pl.read_parquet(out / "downloads.parquet")


def test_every_fault_gets_its_status(tmp_path, server):
    source = write_urls(tmp_path / "urls.parquet", server, list(FAULTS))
    rows = run(source, tmp_path / "out", DownloadImagesParams(max_bytes=1_000_000, http=FAST), shards=1)
    assert dict(zip(rows["url"].str.replace(server.url, "", literal=True), rows["status"])) == FAULTS
    by = {r["url"].replace(server.url, ""): r for r in rows.iter_rows(named=True)}
    assert by["/busy/c"]["attempts"] == 2 and by["/flaky/b"]["attempts"] == 2 and by["/down/x"]["attempts"] == 2
    assert by["/missing"]["attempts"] == 1  # a 404 is not retried
    assert by["/down/x"]["http_status"] == 503 and by["/missing"]["http_status"] == 404
    assert by["/redirect/d"]["final_url"] == server.url + "/img/d"
    assert server.requests["/loop/a"] == 1 and server.requests["/loop/b"] == 1  # the loop is seen, not walked
    assert server.requests["/huge"] == 1 and by["/huge"]["bytes"] is None  # refused from the header
    assert "Content-Length" in by["/huge"]["error_message"]
    # Every input column passes through; every ok row's file is the bytes downloaded.
    assert rows["caption"].to_list() == [f"caption {p}" for p in FAULTS]
    assert rows["n"].to_list() == list(range(len(FAULTS)))
    for row in rows.filter(pl.col("status") == "ok").iter_rows(named=True):
        data = (tmp_path / "out" / row["image_path"]).read_bytes()
        assert len(data) == row["bytes"]
        assert Image.open(io.BytesIO(data)).size == (row["width"], row["height"]) == (64, 64)
    assert by["/img/a?again"]["duplicate_of"] == by["/img/a"]["id"]  # same sha256, flagged on the later id
    assert server.user_agents == {next(iter(server.user_agents))} and "xmdata" in next(iter(server.user_agents))


def test_retry_after_is_honoured_and_noai_can_be_ignored(tmp_path, server):
    source = write_urls(tmp_path / "urls.parquet", server, ["/busy/c", "/noai/e"])
    started = time.perf_counter()
    rows = run(source, tmp_path / "out", DownloadImagesParams(respect_noai=False, http=FAST), shards=1)
    assert rows["status"].to_list() == ["ok", "ok"]
    assert time.perf_counter() - started >= 1.0  # Retry-After: 1, far above the 0.05 s backoff
    too_long = DownloadImagesParams(http=FAST.model_copy(update={"max_retry_after": 0.5}))
    rows = run(write_urls(tmp_path / "b.parquet", server, ["/busy/a"]), tmp_path / "b", too_long, shards=1)
    assert rows["status"].to_list() == ["http_429"] and "Retry-After" in rows["error_message"][0]


def test_robots_retry_after_and_sniffing_rules():
    from xmdata.tasks.images.decode import inspect, sniff
    from xmdata.tasks.images.fetch import Fetcher, retry_after_seconds, robots_forbid

    assert robots_forbid(["noindex, noai"]) and robots_forbid(["xmdata: noimageai"]) and robots_forbid(["NOAI"])
    assert not robots_forbid(["otherbot: noai"]) and not robots_forbid(["noindex"]) and not robots_forbid([])
    assert retry_after_seconds("7") == 7.0 and retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0.0
    assert retry_after_seconds("soon") is None and retry_after_seconds(None) is None
    whole = jpeg(3)
    assert sniff(whole) == "JPEG" and sniff(b"RIFF\x00\x00\x00\x00WEBPVP8 ") == "WEBP" and sniff(b"<html>") is None
    cut = inspect(whole[: len(whole) // 2], DownloadImagesParams())  # a whole response of half a JPEG
    assert cut.status == "corrupt_image" and "JPEG" in cut.error
    assert inspect(whole, DownloadImagesParams()).stored == whole  # originals kept, byte for byte
    refused = Fetcher(DownloadImagesParams(http=FAST)).fetch("http://127.0.0.1:1/a.jpg")  # nothing listens
    assert (refused.status, refused.attempts) == ("connection_error", 2)  # retried: not a timeout, not final


def test_per_host_limit_holds_whatever_the_threads(tmp_path, server):
    server.latency = 0.1
    source = write_urls(tmp_path / "urls.parquet", server, [f"/img/{n}" for n in "abcde" * 2])
    http = FAST.model_copy(update={"threads": 10, "per_host": 2})
    rows = run(source, tmp_path / "out", DownloadImagesParams(http=http), shards=1)
    assert rows["status"].to_list() == ["ok"] * 10 and server.most_active == 2




@pytest.mark.parametrize("format", ["parquet", "webdataset"])
def test_exif_resize_hash_and_packed_formats(tmp_path, server, format):
    server.images["gps"] = gps_jpeg()
    source = write_urls(tmp_path / "urls.parquet", server, ["/img/gps", "/img/a", "/missing"])
    params = DownloadImagesParams(format=format, resize=32, resize_mode="center_crop", perceptual_hash=True, http=FAST)
    rows = run(source, tmp_path / "out", params, shards=1)
    gps = rows.row(0, named=True)
    assert gps["exif_latitude"] == pytest.approx(-(33 + 51 / 60 + 36 / 3600))
    assert gps["exif_longitude"] == pytest.approx(151.21)
    assert gps["exif_datetime"] == "2019:05:04 12:00:00"
    assert (gps["width"], gps["height"], gps["original_width"], gps["original_height"]) == (32, 32, 96, 96)
    assert len(gps["dhash"]) == 16 and rows["dhash"][0] != rows["dhash"][1]
    shard = tmp_path / "out" / "download_images" / "data" / "shard-00000.parquet"
    if format == "parquet":
        stored = pq.read_table(shard).column("image_bytes").to_pylist()
        assert Image.open(io.BytesIO(stored[0])).size == (32, 32) and stored[2] is None
    else:
        with tarfile.open(tmp_path / "out" / "webdataset" / "shard-00000.tar") as tar:
            names = tar.getnames()
            assert names == [f"{gps['id']}.jpg", f"{gps['id']}.json", f"{rows['id'][1]}.jpg", f"{rows['id'][1]}.json"]
            assert Image.open(tar.extractfile(names[0])).size == (32, 32)


def test_ok_rows_feed_score_and_select_images(tmp_path, server):
    from xmdata.tasks.build.image_decode import ImageRef, open_image
    from xmdata.tasks.scoring.input import read_score_input
    from xmdata.schemas import IMAGES
    from xmdata.schemas.readers import read_input
    from xmdata.tasks.selection.image_folder import images_from_folder

    server.images["gps"] = gps_jpeg()
    source = tmp_path / "urls.parquet"
    pq.write_table(pa.table({"url": [server.url + p for p in ("/img/gps", "/img/a", "/missing")],
                             "text": ["a photo", "another", "gone"],
                             "latitude": pa.array([None, "10.5", None], pa.string())}), source)
    out = tmp_path / "out"
    rows = run(str(source), out, DownloadImagesParams(http=FAST), shards=8)  # more shards than rows: empty ones
    assert rows["status"].to_list() == ["ok", "ok", "http_404"]
    pairs = read_score_input(str(out / "images.parquet"), None)  # score's own reader, image root = its folder
    assert "status" not in pairs.column_names and pairs.column("text").to_pylist() == ["a photo", "another"]
    sizes = [open_image(ImageRef(path=p), str(out), 10 ** 8).size for p in pairs.column("image_path").to_pylist()]
    assert sizes == [(96, 96), (64, 64)]
    images = read_input(str(out / "images.parquet"), IMAGES)  # the images contract, as select-images reads it
    assert images.column("path").to_pylist() == pairs.column("image_path").to_pylist()
    assert images.column("latitude").to_pylist() == [pytest.approx(-33.86), 10.5]  # the input's, else EXIF
    assert images.column("longitude").to_pylist() == [pytest.approx(151.21), None]
    photos, no_gps = images_from_folder(str(out / "images"))  # select-images on the folder: EXIF kept
    assert photos.column("latitude").to_pylist() == [pytest.approx(-33.86)]
    assert no_gps.column("reason").to_pylist() == ["no_gps"]


def test_images_coordinates_are_one_pair_from_one_source():
    from xmdata.tasks.images.runs import as_images

    ok = pl.DataFrame({"id": ["given", "half", "text", "none", "exif"],
                       "latitude": ["48.85", "48.85", "abc", None, None], "longitude": ["2.35", None, "2.35", None, None],
                       "exif_latitude": [40.7, 40.7, 40.7, None, 40.7], "exif_longitude": [-74.0, -74.0, -74.0, None, -74.0],
                       "image_path": ["a.jpg", "b.jpg", "c.jpg", "d.jpg", "e.jpg"]})
    pairs = as_images(ok).select("id", "latitude", "longitude", "path").rows()
    assert pairs == [("given", 48.85, 2.35, "a.jpg"),
                     ("half", 48.85, None, "b.jpg"),  # never the input's latitude with EXIF's longitude
                     ("text", None, 2.35, "c.jpg"),  # unreadable: null (geocoding rejects it), not EXIF's
                     ("none", None, None, "d.jpg"), ("exif", 40.7, -74.0, "e.jpg")]
    no_input = as_images(ok.drop("latitude", "longitude")).select("latitude", "longitude").rows()
    assert no_input[0] == (40.7, -74.0) and no_input[3] == (None, None)


@pytest.mark.parametrize("format", ["files", "parquet", "webdataset"])
def test_rerun_skips_and_retry_failed_fetches_only_transient_rows(tmp_path, server, format):
    paths = ["/img/a", "/img/b", "/down/x", "/missing", "/img/c", "/img/d"]
    source = write_urls(tmp_path / "urls.parquet", server, paths)
    params = DownloadImagesParams(format=format, http=FAST)
    first = run(source, tmp_path / "out", params)
    shards = sorted((tmp_path / "out" / "download_images" / "data").iterdir())
    before = {p.name: p.read_bytes() for p in shards}
    served = sum(server.requests.values())
    assert run(source, tmp_path / "out", params).equals(first)
    assert sum(server.requests.values()) == served  # finished shards: nothing fetched
    server.answer_down_with = server.images["e"]  # the 503s are over
    retried = run(source, tmp_path / "out", params, retry_failed=True)
    assert sum(server.requests.values()) == served + 1 and server.requests["/down/x"] == 3
    changed = retried["status"] != first["status"]
    assert retried.filter(changed)["status"].to_list() == ["ok"]
    assert retried.filter(~changed).equals(first.filter(~changed))  # the others as they were
    down_shard = retried.filter(changed)["id"][0]
    for path in shards:  # the shard without the transient row is untouched, byte for byte
        holds_it = down_shard in pq.read_table(path, columns=["id"]).column("id").to_pylist()
        assert holds_it or path.read_bytes() == before[path.name]


@pytest.mark.slow
def test_kill_9_mid_run_then_rerun_loses_nothing_and_refetches_nothing_finished(tmp_path):
    images = {f"{i}": jpeg(i) for i in range(240)}
    server = ImageServer(images, latency=0.02)
    try:
        source = write_urls(tmp_path / "urls.parquet", server, [f"/img/{i}" for i in range(240)])
        out = tmp_path / "out"
        code = ("import sys; from xmdata.flows.download_images import download_images; "
                "from xmdata.runtime.session import execution_session; "
                "from xmdata.tasks.images.params import DownloadImagesParams, HttpOptions; "
                "p = DownloadImagesParams(http=HttpOptions(threads=2));\n"
                "with execution_session('inprocess'): download_images(sys.argv[1], sys.argv[2], 2, p)")
        child = subprocess.Popen([sys.executable, "-c", code, source, str(out)])
        deadline = time.time() + 60
        while sum(server.requests.values()) < 120 and time.time() < deadline:
            time.sleep(0.02)
        os.kill(child.pid, signal.SIGKILL)
        child.wait()
        journals = list((out / "download_images" / "_partial").glob("*.jsonl"))
        finished = {json.loads(line)["id"] for j in journals for line in j.read_text().splitlines()[1:]
                    if line.endswith("}")}  # a line the kill cut is not a finished row
        assert 100 <= sum(server.requests.values()) < 240 and len(finished) > 50  # killed mid-shard
        rows = run(source, out, DownloadImagesParams(http=HttpOptions(threads=2)))
        assert rows.height == 240 and rows["status"].to_list() == ["ok"] * 240  # nothing lost
        path_of = {i: u.replace(server.url, "") for i, u in zip(rows["id"], rows["url"])}
        assert all(server.requests[path_of[i]] == 1 for i in finished)  # nothing finished fetched twice
        assert all(n >= 1 for n in server.requests.values())
        assert sum(n - 1 for n in server.requests.values()) <= 4  # twice: only what was in flight (2 x 2 threads)
        for row in rows.iter_rows(named=True):
            assert (out / row["image_path"]).read_bytes() == images[row["url"].rsplit("/", 1)[1]]
    finally:
        server.close()


def test_cli_refuses_bad_inputs_in_one_line(tmp_path, capsys):
    source = tmp_path / "u.csv"
    source.write_text("link,caption\nhttp://127.0.0.1:9/a.jpg,x\n")
    out = tmp_path / "out"
    cases = [([str(source), "--out", str(out)], "no column 'url'"),
             ([str(source), "--url-column", "link", "--threads", "0", "--out", str(out)], "--threads"),
             ([str(source), "--url-column", "link", "--quality", "50", "--out", str(out)], "only with --resize"),
             ([str(tmp_path / "none.csv"), "--out", str(out)], "file not found")]
    for args, message in cases:
        assert main(["download-images", *args]) == 2
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not out.exists()


def test_flags_and_the_flows_form_are_one_params_model():
    import typing

    from xmdata.cli_parser import build_parser
    from xmdata.cli_params import flag_of, leaf_fields
    from xmdata.flows.download_images import download_images_flow

    command, _ = build_parser().commands["download-images"]
    model = command.get_default("param_flags").model
    assert typing.get_type_hints(download_images_flow.fn)["params"] is model is DownloadImagesParams
    options = {s for a in command.options for s in a.option_strings}
    assert {flag_of(path[-1]) for path, _, _ in leaf_fields(model)} <= options  # `http` too, flattened
    form = {"input_path": "u.csv", "out": "o", "params": DownloadImagesParams().model_dump()}  # as the UI sends it
    assert download_images_flow.validate_parameters(form)["params"] == DownloadImagesParams()
    hashed = DownloadImagesParams().hashed()
    assert "http" not in hashed and hashed == DownloadImagesParams(http=HttpOptions(threads=3)).hashed()


@pytest.mark.slow  # through Prefect and the service, as a user runs it
def test_the_command_downloads_then_retries_only_the_failed_rows(tmp_path, server, cli_env):
    from support.cli_in_process import run_xmdata

    source = write_urls(tmp_path / "urls.parquet", server, ["/img/a", "/down/x", "/missing"])
    args = ["download-images", source, "--out", tmp_path / "out", "--retries", "0", "--shards", "1"]
    first = run_xmdata(args, cli_env)
    assert first.returncode == 0, first.stderr
    assert "1 of 3 rows ok; not downloaded: http_404 1, http_5xx 1" in first.stdout
    server.answer_down_with = server.images["b"]
    again = run_xmdata([*args, "--retry-failed"], cli_env)
    assert again.returncode == 0, again.stderr
    assert "2 of 3 rows ok" in again.stdout and "1 row(s) retried" in again.stdout
    assert server.requests["/down/x"] == 2 and server.requests["/missing"] == 1 and server.requests["/img/a"] == 1


def test_an_fsspec_url_as_out_and_a_retry_there(tmp_path, server):
    import fsspec

    source = write_urls(tmp_path / "urls.parquet", server, ["/img/a", "/down/x", "/missing"])
    out, params = f"memory://xmdata-test/{tmp_path.name}", DownloadImagesParams(format="webdataset", http=FAST)
    with execution_session("inprocess"):
        download_images(source, out, 1, params)
        server.answer_down_with = server.images["b"]
        download_images(source, out, 1, params, retry_failed=True)
    fs = fsspec.filesystem("memory")
    rows = pl.read_parquet(io.BytesIO(fs.cat(f"{out}/downloads.parquet")))
    assert rows["status"].to_list() == ["ok", "ok", "http_404"] and server.requests["/img/a"] == 1
    with tarfile.open(fileobj=io.BytesIO(fs.cat(f"{out}/webdataset/shard-00000.tar"))) as tar:
        assert [n for n in tar.getnames() if n.endswith(".jpg")] == ["000000000.jpg", "000000001.jpg"]
        assert tar.extractfile("000000001.jpg").read() == server.images["b"]
    assert not fs.exists(f"{out}/download_images/_partial/shard-00000.jsonl")  # cleared once recorded
