"""Image download build: a table of URLs in; every row back with its status, and the images under OUT.

Reads like the other builds: ingest the rows into shards, run the download stage over them through
the runtime's stage runner (finished shards skipped, a killed shard resumed row by row from its
journal), then one table of every row (downloads.parquet) and the summary.
"""
from __future__ import annotations

import time

from prefect import flow

from xmdata.runtime import storage
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.build.summary import frame_label_counts
from xmdata.tasks.images.download import download_stage
from xmdata.tasks.images.params import DownloadImagesParams
from xmdata.tasks.images.runs import clear_partials, read_download_input, reopen_transient, write_downloads
from xmdata.tasks.stage_params import DEFAULT_SHARDS, ShardCount

from .finish import finish_build


def download_images(input_path: str, out: str, shards: int, params: DownloadImagesParams,
                    retry_failed: bool = False) -> tuple[list[StageReport], dict, int]:
    """(reports, data facts for summary.json, rows reopened by --retry-failed)."""
    table = read_download_input(input_path, params)  # a broken input stops before any write
    out = storage.absolute(out)
    ingested = ingest(table, "urls", shards, out)
    n_shards = len(ingested.records)  # the plan ingest made: a row's shard is `shard_of` its id among these
    stage = download_stage(params, out, n_shards, retry_failed)
    reopened = reopen_transient(stage, params, ingested.data_paths, out) if retry_failed else 0
    downloaded = run_stage(stage, ingested.data_paths, out)
    clear_partials(out, n_shards)
    frame = write_downloads(downloaded.data_paths, out)
    copies, ok = int(frame["duplicate_of"].is_not_null().sum()), int((frame["status"] == "ok").sum())
    distributions = {"status": frame_label_counts(frame, "status"),  # every loss, by reason
                     "ok_rows": {"exact_duplicate": copies, "first_of_its_bytes": ok - copies}}
    return [ingested, downloaded], distributions, reopened


@flow(name="download-images")
def download_images_flow(input_path: str, out: str, params: DownloadImagesParams = DownloadImagesParams(),
                         retry_failed: bool = False, shards: ShardCount = DEFAULT_SHARDS) -> dict:
    """Download the image of every row of INPUT_PATH into OUT, with a status for every row.

    Args:
        input_path: table (Parquet, CSV, JSONL) with a URL column; every column is kept
        out: output folder or fsspec URL: images/, downloads.parquet, summary.json
        params: what to fetch and how to store it; `http`: how fast and politely (not hashed)
        retry_failed: fetch again only the rows whose status is transient (429, 5xx, timeouts, cut)
        shards: the fewest shards the input is split into (by a hash of each row's id); more when it has
            more rows than XMDATA_SHARD_ROWS a shard

    Docs: docs/how-to/download-images.md; every option: docs/reference/commands.md#download-images.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        started = time.perf_counter()
        reports, distributions, reopened = download_images(input_path, out, shards, params, retry_failed)
        result = finish_build(out, reports, distributions, f"Image download from {input_path}")
        result.update(seconds=round(time.perf_counter() - started, 2), retried_rows=reopened)
        return result
