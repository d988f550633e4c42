"""Rows of several Parquet files, each sorted by the same key, as one sorted stream a bounded
number of rows at a time: what a step that must see a whole table in order (ranks, the output's row
order) reads instead of the concatenated table. Each chunk ends at a group boundary (`group`, a
prefix of the key), so a step that aggregates per group sees each group whole in one chunk."""
from __future__ import annotations

from typing import Iterator

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq

ROWS_IN_MEMORY = 32 * 1024  # each file's share of it (ROW_GROUP at least) is read at a time: ~2x is held
ROW_GROUP = 1024  # write the files to merge in row groups of this size: a file is read a row group at a time


def write_sorted(table: pa.Table, path: str) -> None:
    """A file for `merge_sorted` (TABLE already in its key's order): local, fast, in ROW_GROUP rows."""
    pq.write_table(table, path, row_group_size=ROW_GROUP, compression="lz4")


def rows_per_file(files: int, rows_in_memory: int) -> int:
    """Each file's share of the rows held at once: the batch it is read in."""
    return max(ROW_GROUP, rows_in_memory // max(1, files))


def before(group: list[str], bound: tuple) -> pl.Expr:
    """Rows whose `group` values sort strictly before BOUND (lexicographically; no nulls in `group`)."""
    column, value = pl.col(group[0]), bound[0]
    if len(group) == 1:
        return column < value
    return (column < value) | ((column == value) & before(group[1:], bound[1:]))


class _Source:
    def __init__(self, path: str, batch_rows: int):
        self._batches = pq.ParquetFile(path).iter_batches(batch_size=batch_rows)
        self.batch_rows = batch_rows
        self.rows: pl.DataFrame | None = None
        self.exhausted = False

    def read_more(self) -> None:
        batch = next(self._batches, None)
        if batch is None:
            self.exhausted = True
        else:
            frame = pl.from_arrow(batch)
            self.rows = frame if self.rows is None else pl.concat([self.rows, frame])

    @property
    def held(self) -> int:
        return 0 if self.rows is None else self.rows.height


def merge_sorted(paths: list[str], key: list[str], group: list[str],
                 rows_in_memory: int | None = None) -> Iterator[pl.DataFrame]:
    """Chunks of the rows of PATHS in `key` order (ascending, nulls first), no group split across two
    chunks. Every file must be sorted by `key`; a group's rows may be in several files."""
    assert key[:len(group)] == group, "the group must be a prefix of the key"
    sources = [_Source(path, rows_per_file(len(paths), rows_in_memory or ROWS_IN_MEMORY)) for path in paths]
    while True:
        # Each file holds at least a batch (while it has one): the bound below then moves a batch a
        # file at a time, so each row is looked at a few times, not once per round.
        for source in sources:
            while source.held < source.batch_rows and not source.exhausted:
                source.read_more()
        reading = [s for s in sources if not s.exhausted]
        if not reading and not any(s.held for s in sources):
            return
        # Rows before the smallest last group of a file that may still add rows are complete.
        bound = min((s.rows.select(group).row(-1) for s in reading), default=None)
        taken = []
        for source in sources:
            if not source.held:
                continue
            if bound is None or source.rows.select(group).row(-1) < bound:
                count = source.held
            elif source.rows.select(group).row(0) >= bound:
                count = 0
            else:
                count = int(source.rows.select(before(group, bound).sum()).item())
            if count:
                taken.append(source.rows.head(count))
                source.rows = source.rows.slice(count)
        if taken:
            yield pl.concat(taken).sort(key, nulls_last=False, maintain_order=True)
        else:  # the bounding files hold one group only, so far: read on until it ends
            for source in reading:
                if source.rows.select(group).row(-1) == bound:
                    source.read_more()
