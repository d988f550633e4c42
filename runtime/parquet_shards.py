"""One Parquet file holding a stage's shards one after another, and reading it back a shard at a time:
each shard's rows are in the file's own footer (SHARD_ROWS_KEY), written with the rows, so the two
cannot disagree. What a step that works shard by shard (a unit's rows all in one shard) reads when
it runs again from the gathered file (`xmdata select-translations`)."""
from __future__ import annotations

import json
from typing import Iterable, Iterator

import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.schemas import ContractError

from . import storage
from .atomic import ParquetStream

SHARD_ROWS_KEY = "xmdata.shard_rows"
READ_ROWS = 8 * 1024  # read this many rows at a time: a shard and one such batch are held
TOGETHER_ROWS = 8 * 1024  # small shards are handed on together, up to about this many rows


def concat_parquet_files(paths: list[str], dest: str, schema: pa.Schema | None = None) -> list[int]:
    """DEST: the Parquet files PATHS one after another, read one at a time, each its own row groups;
    returns their rows (also in DEST's footer). SCHEMA defaults to the first file's."""
    if schema is None:
        with storage.open_file(paths[0]) as handle:
            schema = pq.read_schema(handle)
    sizes = []
    with ParquetStream(dest, schema, as_written=True) as stream:
        for path in paths:
            table = storage.read_parquet(path)
            stream.write(table)
            sizes.append(table.num_rows)
            del table
            pa.default_memory_pool().release_unused()  # the shard's buffers back, not kept for the next
        stream.key_values[SHARD_ROWS_KEY] = json.dumps(sizes)
    return sizes


def read_parquet_shards(path: str) -> Iterator[pa.Table]:
    """PATH's shards, one table each, in order; a file without SHARD_ROWS_KEY (written otherwise, or
    by an older xmdata) is one shard."""
    with storage.open_file(path) as handle:
        parquet = pq.ParquetFile(handle)
        recorded = (parquet.metadata.metadata or {}).get(SHARD_ROWS_KEY.encode())
        if recorded is None:
            yield parquet.read()
            return
        sizes = json.loads(recorded)
        if sum(sizes) != parquet.metadata.num_rows:
            raise ContractError(f"{path}: {parquet.metadata.num_rows} rows, but its {SHARD_ROWS_KEY} sum to "
                                f"{sum(sizes)}: the file was altered after it was written")
        pending = parquet.schema_arrow.empty_table()
        for batch in parquet.iter_batches(batch_size=READ_ROWS):
            pending = pa.concat_tables([pending, pa.Table.from_batches([batch])])
            while sizes and pending.num_rows >= sizes[0]:
                yield pending.slice(0, sizes[0])
                pending = pending.slice(sizes.pop(0))
        while sizes:  # empty shards at the end
            yield pending.slice(0, sizes.pop(0))


def together(shards: Iterable[pa.Table], rows: int | None = None) -> Iterator[pa.Table]:
    """SHARDS, consecutive small ones concatenated up to about ROWS (TOGETHER_ROWS): whole shards
    each time, so what holds per shard holds per table; a step's per-call cost is paid per ~ROWS,
    not per shard (the demo's 16 shards of a few rows each are one table)."""
    rows = rows or TOGETHER_ROWS
    pending: list[pa.Table] = []
    held = 0
    for shard in shards:
        if pending and held + shard.num_rows > rows:
            yield pa.concat_tables(pending)
            pending, held = [], 0
        pending.append(shard)
        held += shard.num_rows
    if pending:
        yield pa.concat_tables(pending)
