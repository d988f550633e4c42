"""Ingest: a conformed input, cleaned of bad ids, split into shards by id and written once.

Its shards go through the runtime's stage runner (`run_shards`: skip the finished, run the rest,
account for every one) with a writer of its own as the executor: the input is a table in this
process, so there is nothing to ship anywhere.
"""
from __future__ import annotations

import contextvars
import hashlib
import time
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from xmdata.runtime import storage
from xmdata.runtime.atomic import hash_params
from xmdata.runtime.execution import run_shards
from xmdata.runtime.process import StageReport, write_shard
from xmdata.runtime.shards import ShardPaths, split_into_shards
from xmdata.runtime.stage import Stage

from .rejects import no_rejects
from .rows import reject_bad_ids

INGEST_UPLOADS = 4  # shards written at once to an object store


def _ingest_fn(table: pa.Table, params: dict):  # the stage's function, for the record's sake
    raise NotImplementedError("ingest runs in the flow process, not per shard")


def ingest(table: pa.Table, name: str, n_shards: int, root: str,
           extra_rejects: pa.Table | None = None) -> StageReport:
    """Write shards of a validated table; shards whose record matches are left as they are."""
    stage = Stage(name=name, version="1", fn=_ingest_fn, params={"n_shards": n_shards})
    kept, rejects = reject_bad_ids(table, stage=name)
    if extra_rejects is not None:  # rows refused while reading the input (e.g. photos without EXIF GPS)
        rejects = pa.concat_tables([extra_rejects, rejects])
    table_hash = hash_params({"rows": kept.num_rows, "schema": str(kept.schema),
                              "digest": _table_digest(kept), "rejects": _table_digest(rejects)})
    jobs = list(enumerate(split_into_shards(kept, "id", n_shards)))
    return run_shards(stage, jobs, root, lambda index, shard: f"{table_hash}:{index}",
                      ShardWriter(table_hash, rejects), in_the_ui=False)


class ShardWriter:
    """The executor of ingest: writes each pending shard of the table from this process."""

    where = "in-process"

    def __init__(self, table_hash: str, rejects: pa.Table):
        self.table_hash, self.rejects = table_hash, rejects

    def run(self, stage: Stage, jobs: list[tuple[int, pa.Table]], root: str):
        if not storage.is_url(root):
            for index, shard in jobs:
                yield self._write(stage, root, index, shard)
            return
        with ThreadPoolExecutor(INGEST_UPLOADS) as pool:  # one shard's round trips while the next is encoded
            yield from pool.map(lambda job: contextvars.copy_context().run(self._write, stage, root, *job), jobs)

    def _write(self, stage: Stage, root: str, index: int, shard: pa.Table):
        started = time.perf_counter()
        # Input-level rejects are kept with shard 0 so that every reject is written exactly once.
        shard_rejects = self.rejects if index == 0 else no_rejects()
        record = write_shard(stage, ShardPaths(root, stage.name, index), f"{self.table_hash}:{index}",
                             shard.num_rows + shard_rejects.num_rows, shard, shard_rejects)
        outcome = {"record": record, "recomputed": True, "seconds": time.perf_counter() - started, "load_s": 0.0}
        return index, outcome, None


def _table_digest(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())  # the digest must not depend on chunk layout
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
