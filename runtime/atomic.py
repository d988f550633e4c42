"""Atomic writes: a reader never sees half a file, and a crash leaves only a stray temp file."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

from . import storage


def replace_atomically(path: str, write) -> str:
    """Write through `write(tmp)`, then make it `path` at once; returns the sha256 of the bytes, taken
    from the temp file (an uploaded object is not fetched back to be hashed)."""
    if storage.is_url(path):
        return _upload_whole(path, write)
    path = storage.local(path)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path) or ".", prefix=".tmp-", suffix=".part")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, 0o644)  # mkstemp makes 0600; workers running as another user must read it
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        digest = sha256_file(tmp)
        os.replace(tmp, path)
        return digest
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _upload_whole(url: str, write) -> str:
    """An object store has no rename, but a PUT is all-or-nothing: write the file here, then upload
    it in one request. A run killed mid-upload leaves no object (an unfinished multipart upload is
    invisible), and the shard's completion record, uploaded last, is what readers trust."""
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=".part")
    os.close(fd)
    try:
        write(tmp)
        storage.upload(tmp, url)
        return sha256_file(tmp)
    finally:
        os.unlink(tmp)


# Fixed writer options: same table, same bytes (the reproducibility promise rests on this).
PARQUET_OPTIONS = dict(compression="zstd", compression_level=3, write_statistics=True, use_dictionary=True)
ROW_GROUP_ROWS = 64 * 1024


def write_parquet_atomic(table: pa.Table, path: str) -> str:
    # One chunk: the same rows give the same pages whatever chunk layout the reader produced.
    def write(sink):
        pq.write_table(table.combine_chunks(), sink, row_group_size=ROW_GROUP_ROWS, **PARQUET_OPTIONS)

    if storage.is_url(path):  # encoded in memory and sent: no temp file to write, re-read and delete
        sink = pa.BufferOutputStream()
        write(sink)
        return _put_whole(path, sink.getvalue().to_pybytes())
    return replace_atomically(path, write)


class ParquetStream:
    """A Parquet file written a table at a time, atomically: the bytes `write_parquet_atomic` writes
    for all the tables at once (row groups of exactly ROW_GROUP_ROWS), holding at most one row group.
    `as_written`: each table its own row groups instead, holding nothing (the bytes then follow how
    the rows came, not only which). `key_values`: set before the block ends, kept in the file's
    footer. Use as a context manager: the file appears when the block ends without an exception."""

    def __init__(self, path: str, schema: pa.Schema, as_written: bool = False):
        self.path, self.schema, self.rows, self.as_written = path, schema, 0, as_written
        self.key_values: dict[str, str] = {}
        folder = None if storage.is_url(path) else os.path.dirname(storage.local(path)) or "."
        if folder:
            os.makedirs(folder, exist_ok=True)
        fd, self._tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
        os.close(fd)
        try:
            self._writer = pq.ParquetWriter(self._tmp, schema, **PARQUET_OPTIONS)
        except BaseException:
            os.unlink(self._tmp)
            raise
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        self.rows += table.num_rows
        if self.as_written:
            if table.num_rows:
                self._writer.write_table(table.cast(self.schema).combine_chunks(), row_group_size=ROW_GROUP_ROWS)
            return
        self._pending.append(table.cast(self.schema))
        self._pending_rows += table.num_rows
        if self._pending_rows >= ROW_GROUP_ROWS:
            whole = pa.concat_tables(self._pending).combine_chunks()
            full = whole.num_rows // ROW_GROUP_ROWS * ROW_GROUP_ROWS
            self._writer.write_table(whole.slice(0, full), row_group_size=ROW_GROUP_ROWS)
            rest = whole.slice(full)
            self._pending, self._pending_rows = [rest], rest.num_rows

    def __enter__(self) -> "ParquetStream":
        return self

    def __exit__(self, kind, error, trace) -> None:
        try:
            if kind is None:
                self._finish()
        finally:
            try:
                self._writer.close()  # a second close is a no-op; on a failure, its own error hides nothing
            except Exception:  # noqa: BLE001
                if kind is None:
                    raise
            if os.path.exists(self._tmp):
                os.unlink(self._tmp)

    def _finish(self) -> None:
        if self._pending_rows or not self.rows:
            self._writer.write_table(pa.concat_tables([self.schema.empty_table(), *self._pending]).combine_chunks(),
                                     row_group_size=ROW_GROUP_ROWS)
        if self.key_values:
            self._writer.add_key_value_metadata(self.key_values)
        self._writer.close()
        if storage.is_url(self.path):
            storage.upload(self._tmp, self.path)
        else:
            os.chmod(self._tmp, 0o644)  # as replace_atomically: other users' workers read it
            with open(self._tmp, "rb") as f:
                os.fsync(f.fileno())
            os.replace(self._tmp, storage.local(self.path))


TEMP_FOLDER_PREFIX = ".tmp-xmdata-"  # a step's temp folder in an output folder (only these are swept)


def local_temp_folder(out: str) -> tempfile.TemporaryDirectory:
    """A private temp folder inside the output folder OUT (the system's when OUT is a URL): on the
    output's disk, not in a /tmp that may be memory; one a killed run leaves is swept at the next
    start (`folder_lock.remove_stray_temp_files`)."""
    folder = None if storage.is_url(out) else storage.local(out)
    if folder:
        os.makedirs(folder, exist_ok=True)
    return tempfile.TemporaryDirectory(dir=folder, prefix=TEMP_FOLDER_PREFIX)


def write_json_atomic(obj, path: str) -> None:
    write_text_atomic(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", path)


def write_text_atomic(text: str, path: str) -> None:
    if storage.is_url(path):
        _put_whole(path, text.encode("utf-8"))
        return
    replace_atomically(path, lambda tmp: open(tmp, "w", encoding="utf-8").write(text))


def _put_whole(url: str, data: bytes) -> str:
    """One PUT of bytes already in memory (shards, records): whole or absent, as `_upload_whole`."""
    storage.write_bytes(url, data)
    return hashlib.sha256(data).hexdigest()


def sha256_file(path: str) -> str:
    if storage.is_url(path):
        return hashlib.sha256(storage.read_bytes(path)).hexdigest()
    digest = hashlib.sha256()
    with open(storage.local(path), "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def hash_params(params: dict) -> str:
    """A stable hash of JSON-able parameters (key order does not matter)."""
    canonical = json.dumps(params, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()
