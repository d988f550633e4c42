"""A release with an `image_download` section, against a real HTTP server on 127.0.0.1
(tests/support/image_server.py): the published table has every row with its status, the card counts
them, later sections select and score the downloaded images by reference (`image_download:images.parquet`),
the manifest verifies, a rerun fetches nothing again, and a bad input is refused before any write."""
import json
import os
import re

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata
from support.image_server import ImageServer, gps_jpeg, jpeg

from xmdata.flows.release_config import load_release_config
from xmdata.flows.release_preflight import checked_release
from xmdata.schemas import ContractError

PATHS = {"/img/a": "ok", "/img/b": "ok", "/redirect/c": "ok", "/missing": "http_404"}
CONFIG = """name: images
shards: 2
image_download:
  input: urls.parquet
  http: {threads: 4, retries: 0, connect_timeout: 2.0, read_timeout: 5.0}
"""
USES = """image_selection: {input: "image_download:images.parquet", per_language: 1}
scoring: {input: captions.jsonl, images: "image_download:images.parquet", clip_model: "tiny:open_clip"}
"""


@pytest.fixture
def server():
    served = ImageServer({"a": gps_jpeg(0), **{name: jpeg(seed) for seed, name in enumerate("bc", 1)}})
    yield served
    served.close()


def write_release(tmp_path, server, uses: str = "") -> str:
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(len(PATHS))], "url": [server.url + p for p in PATHS]}),
                   tmp_path / "urls.parquet")
    (tmp_path / "captions.jsonl").write_text("".join(
        json.dumps({"id": f"c{i}", "text": f"a photo number {i}", "language": "en", "image_id": f"r{i}"}) + "\n"
        for i in range(len(PATHS))))
    (tmp_path / "release.yaml").write_text(CONFIG + uses)
    return str(tmp_path / "release.yaml")


SCORE_DOWNLOAD = "scoring: {input: captions.jsonl, images: 'image_download:%s', clip_model: 'tiny:open_clip'}\n"


@pytest.mark.parametrize("uses, error", [
    (SCORE_DOWNLOAD % "images.parquet", None),
    (SCORE_DOWNLOAD % "pictures.parquet",
     "scoring.images: image_download:pictures.parquet (the download writes images.parquet and downloads.parquet)"),
    (SCORE_DOWNLOAD % "downloads.parquet",
     "scoring.images: image_download:downloads.parquet (an images table is image_download:images.parquet"),
    ("image_selection: {input: 'image_download:images.parquet'}\n",
     "image_selection.input: image_download:images.parquet (image_download.format is webdataset: only `files`"),
])
def test_later_sections_name_the_download_and_a_wrong_reference_is_refused(tmp_path, server, uses, error):
    config = write_release(tmp_path, server, uses)
    if "image_selection" in uses:  # a packed format gives no image a path of its own
        (tmp_path / "release.yaml").write_text(CONFIG.replace("input: urls.parquet", "input: urls.parquet\n"
                                                              "  format: webdataset") + uses)
    if error is None:
        release = checked_release(config, models="tiny")  # the download's output is not there yet: not read
        assert release.config.scoring.images == "image_download:images.parquet"
        return
    with pytest.raises(ContractError, match=re.escape(error)) as refused:
        load_release_config(config)
    assert error in str(refused.value)


def test_without_a_download_section_the_reference_is_refused(tmp_path):
    (tmp_path / "release.yaml").write_text("name: x\nimage_selection: {input: 'image_download:images.parquet'}\n")
    with pytest.raises(ContractError, match="image_download:images.parquet .no image_download section downloads it"):
        load_release_config(str(tmp_path / "release.yaml"))


def test_a_bad_download_input_is_refused_before_anything_is_written(tmp_path, server):
    config = write_release(tmp_path, server)
    bad = CONFIG.replace("input: urls.parquet", "input: urls.parquet\n  url_column: link")
    (tmp_path / "release.yaml").write_text(bad)
    with pytest.raises(ContractError, match="no column 'link'"):
        checked_release(config)
    result = run_xmdata(["release", "--config", config, "--out", tmp_path / "out"], dict(os.environ))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "no column 'link'" in result.stderr and not (tmp_path / "out").exists()
    release = checked_release(write_release(tmp_path, server))
    assert release.config.image_download.input == str(tmp_path / "urls.parquet")
    assert [w for w, _ in release.config.inputs()] == ["image_download.input"]


@pytest.mark.slow  # starts the session's service (Prefect server) and builds twice
def test_a_release_downloads_publishes_every_status_and_a_rerun_fetches_nothing_again(tmp_path, server, cli_env):
    config, out = write_release(tmp_path, server, USES), tmp_path / "out"
    command = ["release", "--config", config, "--out", out, "--quiet"]
    result = run_xmdata(command, cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    table = pl.read_parquet(out / "data" / "image_downloads.parquet")
    assert dict(zip(table["url"].str.replace(server.url, "", literal=True), table["status"])) == PATHS
    selection = pl.read_parquet(out / "data" / "images.parquet")  # from the downloaded files' EXIF GPS
    assert set(selection["image_id"]) == {"r0"} and set(selection["country"]) == {"AU"}
    no_gps = pl.read_parquet(out / "rejects" / "geocode.parquet")
    assert sorted(no_gps["row_id"]) == ["r1", "r2"] and set(no_gps["reason"]) == {"no_gps"}
    scores = pl.read_parquet(out / "data" / "clip_scores.parquet")  # captions against the downloaded files
    assert scores.filter(pl.col("clip_score").is_not_null())["id"].sort().to_list() == ["c0", "c1", "c2"]
    assert scores.filter(pl.col("id") != "c3")["image_path"].str.starts_with("images/").all()
    rejects = pl.read_parquet(out / "rejects" / "clip_score.parquet")
    assert rejects.select("row_id", "reason").rows() == [("c3", "no_image_reference")]  # its image is the 404
    card = (out / "README.md").read_text()
    assert "## Image downloads" in card and "| ok | 3 |" in card and "| http_404 | 1 |" in card
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["release"]["inputs"]["image_download.input"]["path"] == "urls.parquet"
    assert run_xmdata(["release", "verify", out], cli_env).returncode == 0
    fetched = sum(server.requests.values())
    again = run_xmdata(command, cli_env)
    assert again.returncode == 0, again.stderr[-3000:]
    assert sum(server.requests.values()) == fetched  # every shard finished: skipped, nothing fetched twice
    rerun = json.loads((out / "manifest.json").read_text())
    assert rerun["release_sha256"] == manifest["release_sha256"]
    assert run_xmdata(["release", "verify", out], cli_env).returncode == 0
