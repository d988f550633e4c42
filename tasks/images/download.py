"""The download stage: one shard of rows in, the same rows out with what their URL gave.

Network threads only fetch (`http.threads` per shard, `http.per_host` per host); decoding, EXIF,
hashing, storing and the journal run on a pool of decode threads (Pillow decodes without the GIL), and
at most two bodies per network thread wait for them. Rows are written in input order, whatever order
they finished in, so a resumed shard writes the same bytes as an uninterrupted one.
"""
from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

import pyarrow as pa

from xmdata import __version__
from xmdata.runtime.atomic import hash_params
from xmdata.runtime.shards import shard_of
from xmdata.runtime.stage import Stage
from xmdata.schemas.images import DOWNLOAD_FIELDS, FIELD_NAMES, IMAGE_BYTES, OK, TRANSIENT
from xmdata.tasks.build.rejects import no_rejects

from .decode import inspect
from .fetch import Fetched, Fetcher
from .journal import Journal
from .params import DownloadImagesParams
from .write import STAGE, ImageStore

VERSION = "1"
DECODE_THREADS = min(8, os.cpu_count() or 1)


def download_stage(params: DownloadImagesParams, root: str, n_shards: int, retry_failed: bool = False) -> Stage:
    """The record hashes `params.hashed()`; the shard gets the whole typed params through its function."""
    return Stage(STAGE, VERSION, DownloadShard(params, root, n_shards, retry_failed), params=params.hashed())


def journal_version(params: DownloadImagesParams) -> dict:
    """What a journal must have been written with to be resumed: the record's params hash and code version."""
    return {"params_hash": hash_params(params.hashed()), "code_version": f"xmdata-{__version__}/{STAGE}-{VERSION}"}


@dataclass(frozen=True)
class DownloadShard:
    """The stage's function. `root`: the run's --out (absolute path or URL); the shard's index is the
    one ingest gave its rows (`shard_of` their id), so its files and journal are found again.
    `retry_failed`: a journal's transient rows are fetched again too (a shard killed before its record)."""

    params: DownloadImagesParams
    root: str
    n_shards: int
    retry_failed: bool = False

    def __call__(self, table: pa.Table, _hashed: dict) -> tuple[pa.Table, pa.Table]:
        ids = [str(i) for i in table.column("id").to_pylist()]
        if not ids:  # an empty shard has no index to find, and nothing to fetch
            empty = _with_columns(table, [])
            if self.params.format == "parquet":
                empty = empty.append_column(IMAGE_BYTES, pa.array([], IMAGE_BYTES.type))
            return empty, no_rejects()
        index = shard_of(ids[0], self.n_shards)
        store = ImageStore(self.params.format, self.root, index, self.params.caption_column)
        journal = Journal(self.root, index, journal_version(self.params))
        finished = {i: e for i, e in journal.load().items()
                    if store.has(e) and not (self.retry_failed and e["status"] in TRANSIENT)}
        entries: list[dict | None] = [finished.get(i) for i in ids]
        journal.start([e for e in entries if e is not None])
        urls = table.column(self.params.url_column).to_pylist()
        try:
            self._fetch_missing(ids, urls, entries, store, journal)
        finally:
            journal.close()
        return store.pack(_with_columns(table, entries), [e["_stored"] for e in entries]), no_rejects()

    def _fetch_missing(self, ids, urls, entries, store: ImageStore, journal: Journal) -> None:
        todo = [i for i, e in enumerate(entries) if e is None]
        if not todo:
            return
        fetcher = Fetcher(self.params)
        threads = min(self.params.http.threads, len(todo))
        waiting = threading.BoundedSemaphore(2 * threads)  # bodies fetched but not yet decoded

        def finish(i: int, got: Fetched) -> None:
            try:
                entries[i] = entry = outcome(ids[i], got, self.params, store)
                journal.add(entry)
            finally:
                waiting.release()

        def fetch(i: int):
            waiting.acquire()
            try:
                got = fetcher.fetch(urls[i])
            except BaseException:
                waiting.release()
                raise
            return decoders.submit(finish, i, got)

        with ThreadPoolExecutor(DECODE_THREADS, thread_name_prefix="xmdata-decode") as decoders, \
                ThreadPoolExecutor(threads, thread_name_prefix="xmdata-fetch") as network:
            for queued in list(network.map(fetch, todo)):
                queued.result()  # an exception in our own code (not a bad row) fails the shard, named


def _with_columns(table: pa.Table, entries: list[dict]) -> pa.Table:
    for field in DOWNLOAD_FIELDS:
        table = table.append_column(field, pa.array([e[field.name] for e in entries], field.type))
    return table


def outcome(row_id: str, got: Fetched, params: DownloadImagesParams, store: ImageStore) -> dict:
    """The row's download columns (and `_stored`, the staged file's name), from the fetch and decode."""
    entry = {name: None for name in FIELD_NAMES}
    entry.update(id=row_id, status=got.status, error_message=got.error, final_url=got.final_url,
                 http_status=got.http_status, attempts=got.attempts, _stored=None)
    if got.data is None:
        return entry
    entry.update(bytes=len(got.data), sha256=hashlib.sha256(got.data).hexdigest())
    seen = inspect(got.data, params)
    entry.update(status=seen.status, error_message=seen.error, width=seen.width, height=seen.height,
                 original_width=seen.original_width, original_height=seen.original_height, format=seen.format,
                 exif_latitude=seen.exif_latitude, exif_longitude=seen.exif_longitude,
                 exif_datetime=seen.exif_datetime, dhash=seen.dhash)
    if seen.status == OK:
        entry["image_path"], entry["_stored"] = store.store(row_id, seen.format, seen.stored)
    return entry
