"""Ingest: a conformed input, cleaned of bad ids, split into shards by id and written once.

The input is read a batch at a time (`schemas/input_batches.py`) and never held whole: each batch's
rows go to their shard's spill file (Arrow IPC, in a private temporary folder), then each shard is
read back on its own, cleaned of bad ids and written through the runtime's stage runner
(`run_shards`: skip the finished, run the rest, account for every one). A row's shard comes from its
id alone (`shard_of`), so every copy of an id lands in one shard: the ids are checked unique across
the whole input shard by shard, the first row of an id (in input order) kept. How many shards: at
least the caller's, more when the input has more than `XMDATA_SHARD_ROWS` rows a shard, so that a
process holds a batch or a shard at a time, whatever the input's size.
"""
from __future__ import annotations

import contextvars
import hashlib
import os
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa

from xmdata.runtime import settings, storage
from xmdata.runtime.execution import run_shards
from xmdata.runtime.process import StageReport, write_shard
from xmdata.runtime.shards import ShardPaths, shard_assignment, shard_count
from xmdata.runtime.stage import Stage
from xmdata.schemas.input_batches import ParquetBatches, TableBatches

from .rejects import concat_rejects
from .rows import reject_bad_ids

INGEST_UPLOADS = 4  # shards written at once to an object store


def _ingest_fn(table: pa.Table, params: dict):  # the stage's function, for the record's sake
    raise NotImplementedError("ingest runs in the flow process, not per shard")


def ingest(source: pa.Table | ParquetBatches | TableBatches, name: str, min_shards: int, root: str,
           extra_rejects: pa.Table | None = None) -> StageReport:
    """Write the shards of a checked input; shards whose record matches are left as they are.
    `extra_rejects`: rows refused while reading the input (photos without EXIF GPS), kept with shard 0."""
    source = TableBatches(source) if isinstance(source, pa.Table) else source
    n_shards = shard_count(source.num_rows, min_shards, settings.SHARD_ROWS.get())
    stage = Stage(name=name, version="2", fn=_ingest_fn, params={"n_shards": n_shards})
    with tempfile.TemporaryDirectory(prefix="xmdata-ingest-") as spill:  # mkdtemp: owner only
        paths = spill_shards(source, n_shards, spill)
        writer = ShardWriter(name, paths, extra_rejects)
        return run_shards(stage, list(enumerate(paths)), root, writer.input_sha, writer, in_the_ui=False)


def spill_shards(source: ParquetBatches | TableBatches, n_shards: int, folder: str) -> list[str]:
    """Every batch's rows appended to their shard's IPC file, in input order; one path per shard."""
    paths = [os.path.join(folder, f"shard-{i:05d}.arrow") for i in range(n_shards)]
    writers: dict[int, pa.ipc.RecordBatchStreamWriter] = {}
    schema = None
    try:
        for batch in source.batches():
            schema = schema or batch.schema
            assignment = shard_assignment(batch.column("id"), n_shards)
            order = np.argsort(assignment, kind="stable")  # input order kept inside a shard
            ordered, counts = batch.take(pa.array(order)), np.bincount(assignment, minlength=n_shards)
            offset = 0
            for index in map(int, np.flatnonzero(counts)):
                if index not in writers:
                    writers[index] = pa.ipc.new_stream(paths[index], schema)
                writers[index].write_table(ordered.slice(offset, int(counts[index])))
                offset += int(counts[index])
    finally:
        for writer in writers.values():
            writer.close()
    for index, path in enumerate(paths):
        if index not in writers:  # no row of the input hashes here: an empty shard, with the schema
            with pa.ipc.new_stream(path, schema):
                pass
    return paths


class ShardWriter:
    """The executor of ingest: writes each pending shard from its spill file, from this process."""

    where = "in-process"

    def __init__(self, name: str, paths: list[str], extra_rejects: pa.Table | None):
        self.name, self.paths, self.extra_rejects = name, paths, extra_rejects

    def shard(self, index: int) -> tuple[pa.Table, pa.Table]:
        """(kept, rejects) of one shard: its rows less empty and repeated ids."""
        with pa.ipc.open_stream(self.paths[index]) as reader:
            table = reader.read_all().combine_chunks()
        kept, rejects = reject_bad_ids(table, stage=self.name)
        if index == 0 and self.extra_rejects is not None:
            rejects = concat_rejects([self.extra_rejects, rejects])
        return kept, rejects

    def input_sha(self, index: int, _path: str) -> str:
        return _shard_digest(*self.shard(index))

    def run(self, stage: Stage, jobs: list[tuple[int, str]], root: str):
        if not storage.is_url(root):
            for index, _ in jobs:
                yield self._write(stage, root, index)
            return
        with ThreadPoolExecutor(INGEST_UPLOADS) as pool:  # one shard's round trips while the next is encoded
            yield from pool.map(lambda job: contextvars.copy_context().run(self._write, stage, root, job[0]), jobs)

    def _write(self, stage: Stage, root: str, index: int):
        started = time.perf_counter()
        kept, rejects = self.shard(index)
        record = write_shard(stage, ShardPaths(root, stage.name, index), _shard_digest(kept, rejects),
                             kept.num_rows + rejects.num_rows, kept, rejects)
        del kept, rejects
        pa.default_memory_pool().release_unused()  # one shard's buffers back, not kept for the next
        outcome = {"record": record, "recomputed": True, "seconds": time.perf_counter() - started, "load_s": 0.0}
        return index, outcome, None


def _shard_digest(kept: pa.Table, rejects: pa.Table) -> str:
    """What a shard holds, whatever the batches it came in: its record's input hash."""
    digest = hashlib.sha256()
    for table in (kept, rejects):
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table.combine_chunks())  # the digest must not depend on chunk layout
        digest.update(sink.getvalue())
    return digest.hexdigest()
