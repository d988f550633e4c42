"""A release with an `image_download` section, against a real HTTP server on 127.0.0.1
(tests/support/image_server.py): the published table has every row with its status, the card counts
them, the manifest verifies, a rerun fetches nothing again, and a bad input is refused before any write."""
import json
import os

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata
from support.image_server import ImageServer, jpeg

from xmdata.flows.release_preflight import checked_release
from xmdata.schemas import ContractError

PATHS = {"/img/a": "ok", "/img/b": "ok", "/redirect/c": "ok", "/missing": "http_404"}
CONFIG = """name: images
shards: 2
image_download:
  input: urls.parquet
  http: {threads: 4, retries: 0, connect_timeout: 2.0, read_timeout: 5.0}
"""


@pytest.fixture
def server():
    served = ImageServer({name: jpeg(seed) for seed, name in enumerate("abc")})
    yield served
    served.close()


def write_release(tmp_path, server) -> str:
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(len(PATHS))], "url": [server.url + p for p in PATHS]}),
                   tmp_path / "urls.parquet")
    (tmp_path / "release.yaml").write_text(CONFIG)
    return str(tmp_path / "release.yaml")


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
    config, out = write_release(tmp_path, server), tmp_path / "out"
    command = ["release", "--config", config, "--out", out, "--quiet"]
    result = run_xmdata(command, cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    table = pl.read_parquet(out / "data" / "image_downloads.parquet")
    assert dict(zip(table["url"].str.replace(server.url, "", literal=True), table["status"])) == PATHS
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
