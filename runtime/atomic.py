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
from .faults import writing_into


PUBLIC_FILE = 0o644  # the default: workers running as another user must read it
PRIVATE_FILE = 0o600  # owner_only.write_private's files (a service's state, a training run's)


def replace_atomically(path: str, write, *, private: bool = False) -> str:
    """Write through `write(tmp)`, then make it `path` at once; returns the sha256 of the bytes, taken
    from the temp file (an uploaded object is not fetched back to be hashed). `private`: 0600 (mkstemp
    makes the temp file so, from its first byte), else 0644."""
    if storage.is_url(path):
        return _upload_whole(path, write)
    return _replace_local(storage.local(path), write, private=private, sync=True, digest=True)


def write_bytes_atomic(data: bytes, path: str, *, private: bool = False, sync: bool = True) -> None:
    """Bytes in memory, whole or absent: one PUT on a store, a temp file renamed here. `sync=False`:
    no fsync, for many small files (a shard's images) whose journal vouches for them and is not synced
    either: a killed process loses nothing the OS has."""
    if storage.is_url(path):
        storage.write_bytes(path, data)
        return

    def write(tmp):
        with open(tmp, "wb") as f:
            f.write(data)

    _replace_local(storage.local(path), write, private=private, sync=sync, digest=False)


def _replace_local(path: str, write, *, private: bool, sync: bool, digest: bool) -> str | None:
    folder = os.path.dirname(path) or "."
    with writing_into(folder):  # a full disk: OutOfSpace naming the folder, the temp file gone
        return _replace_in(folder, path, write, private=private, sync=sync, digest=digest)


def _replace_in(folder: str, path: str, write, *, private: bool, sync: bool, digest: bool) -> str | None:
    os.makedirs(folder, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
    os.close(fd)
    try:
        write(tmp)
        os.chmod(tmp, PRIVATE_FILE if private else PUBLIC_FILE)
        if sync:
            with open(tmp, "rb") as f:
                os.fsync(f.fileno())
        sha256 = sha256_file(tmp) if digest else None
        os.replace(tmp, path)
        return sha256
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


def _write_parquet(table: pa.Table, sink) -> None:
    # One chunk: the same rows give the same pages whatever chunk layout the reader produced.
    pq.write_table(table.combine_chunks(), sink, row_group_size=ROW_GROUP_ROWS, **PARQUET_OPTIONS)


def parquet_bytes(table: pa.Table) -> bytes:
    """The bytes write_parquet_atomic writes for TABLE, encoded in memory."""
    sink = pa.BufferOutputStream()
    _write_parquet(table, sink)
    return sink.getvalue().to_pybytes()


def write_parquet_atomic(table: pa.Table, path: str) -> str:
    if storage.is_url(path):  # encoded in memory and sent: no temp file to write, re-read and delete
        return _put_whole(path, parquet_bytes(table))
    return replace_atomically(path, lambda sink: _write_parquet(table, sink))


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
        self._folder = folder or tempfile.gettempdir()
        with writing_into(self._folder):
            fd, self._tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-", suffix=".part")
        os.close(fd)
        try:
            with writing_into(self._folder):
                self._writer = pq.ParquetWriter(self._tmp, schema, **PARQUET_OPTIONS)
        except BaseException:
            os.unlink(self._tmp)
            raise
        self._pending: list[pa.Table] = []
        self._pending_rows = 0

    def write(self, table: pa.Table) -> None:
        with writing_into(self._folder):
            self._write(table)

    def _write(self, table: pa.Table) -> None:
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
                with writing_into(self._folder):
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
            os.chmod(self._tmp, PUBLIC_FILE)  # as replace_atomically: other users' workers read it
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


def publish_folder(target: str, fill) -> bool:
    """A local folder that appears whole: `fill(tmp)` fills a temp folder beside TARGET, then one rename
    makes it TARGET (a killed run leaves only the temp folder). False when TARGET was already there
    (another process finished the same first): this copy is dropped and that one stands."""
    parent = os.path.dirname(os.path.abspath(target))
    with writing_into(parent):
        os.makedirs(parent, exist_ok=True)
        scratch = tempfile.mkdtemp(dir=parent, prefix=TEMP_FOLDER_PREFIX)
    try:
        with writing_into(parent):
            fill(scratch)
        try:
            os.rename(scratch, target)
            return True
        except OSError:
            if not os.path.isdir(target):
                raise
            shutil.rmtree(scratch)
            return False
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise


def move_files_atomic(folder: str, dest: str, *, private: bool = False, last: tuple[str, ...] = ()) -> None:
    """Every file under the local FOLDER moved to its relative path under DEST, each whole or absent: a
    folder (renamed in: on the same disk, as local_temp_folder's) or a store URL (one PUT each, then
    deleted here). The folder is not made at once: what a reader trusts goes in after the rest (`last`:
    relative paths, with `/`, moved after every other file; a model's card)."""
    files = sorted(os.path.relpath(os.path.join(root, name), folder).replace(os.sep, "/")
                   for root, _, names in os.walk(folder) for name in names)
    for relative in sorted(files, key=lambda name: name in last):  # stable: the order above, `last` at the end
        source, target = os.path.join(folder, *relative.split("/")), storage.join(dest, *relative.split("/"))
        if storage.is_url(target):
            storage.upload(source, target)
            os.unlink(source)
        else:
            _replace_local(target, lambda tmp, s=source: shutil.move(s, tmp), private=private, sync=True,
                           digest=False)


def write_json_atomic(obj, path: str, *, private: bool = False) -> None:
    write_text_atomic(json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n", path, private=private)


def write_text_atomic(text: str, path: str, *, private: bool = False) -> None:
    write_bytes_atomic(text.encode("utf-8"), path, private=private)


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
