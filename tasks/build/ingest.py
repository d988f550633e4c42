"""Ingest: a conformed input, cleaned of bad ids, split into shards by id and written once."""
from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import pyarrow as pa

from xmdata.runtime import storage
from xmdata.runtime.atomic import hash_params
from xmdata.runtime.process import StageReport, write_shard
from xmdata.runtime.records import finished_record
from xmdata.runtime.shards import ShardPaths, remove_shards_beyond, split_into_shards
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
    recorded = remove_shards_beyond(root, name, n_shards)

    def write(index: int, shard: pa.Table) -> tuple[dict, bool]:
        paths = ShardPaths(root, name, index)
        shard_hash = f"{table_hash}:{index}"
        record = finished_record(stage, paths, shard_hash) if index in recorded else None
        if record is not None:
            return record, False
        # Input-level rejects are kept with shard 0 so that every reject is written exactly once.
        shard_rejects = rejects if index == 0 else no_rejects()
        rows_in = shard.num_rows + shard_rejects.num_rows
        return write_shard(stage, paths, shard_hash, rows_in, shard, shard_rejects), True

    shards = enumerate(split_into_shards(kept, "id", n_shards))
    if storage.is_url(root):  # uploads overlap: one shard's round trips while the next is encoded
        with ThreadPoolExecutor(INGEST_UPLOADS) as pool:
            written = list(pool.map(lambda job: write(*job), shards))
    else:
        written = [write(index, shard) for index, shard in shards]
    run = sum(ran for _, ran in written)
    return StageReport(name, [record for record, _ in written], shards_run=run, shards_skipped=n_shards - run,
                       data_paths=[ShardPaths(root, name, i).data for i in range(n_shards)])


def _table_digest(table: pa.Table) -> str:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table.combine_chunks())  # the digest must not depend on chunk layout
    return hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest()
