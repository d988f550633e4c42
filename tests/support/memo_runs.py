"""A stage's function run as a shard runs it (runtime/process.py), with or without a memo, and a table's
Parquet bytes: what the memo tests compare."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.runtime import memo


def run_shard(stage, table: pa.Table, location: "str | memo.MemoOptions | None", audit: float = 0.0):
    """(kept, rejects, {kind: counts}) of STAGE's function on TABLE, the memo at LOCATION (None: off).
    A location is a new command's memo (its store knows nothing yet); given MemoOptions, shards of
    one command (they share its store: what it knows of the entry files, whether it can be written)."""
    options = location if isinstance(location, memo.MemoOptions) else memo.MemoOptions(location, audit)
    with memo.shard_scope(options, stage.code_version, stage.memo_params) as scope:
        kept, rejects = stage.fn(table, stage.params)
    return kept, rejects, {kind: counts.as_dict() for kind, counts in scope.counts.items()}


def parquet_bytes(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink)
    return sink.getvalue().to_pybytes()
