"""An input read in batches: checked whole before anything is written, never held whole.

A local Parquet file is read a batch at a time (`ParquetBatches`); other inputs (CSV, JSON, a
URL, a table a flow made) are read whole as before and handed on in batches (`TableBatches`).
"""
from __future__ import annotations

from typing import Iterator

import pyarrow as pa

from .column_map import apply_active_map
from .contract import ContractError, TableContract
from .validate import conform, find_violations, merge_violations

BATCH_ROWS = 65_536  # rows read at once: the ingest holds one batch of the input, not the input


class TableBatches:
    """A table already in memory, handed on in batches."""

    def __init__(self, table: pa.Table):
        self.table, self.num_rows = table, table.num_rows

    def check(self) -> None:
        """Nothing left to check: the table was conformed when it was read."""

    def batches(self) -> Iterator[pa.Table]:
        for offset in range(0, max(self.num_rows, 1), BATCH_ROWS):  # an empty table: one empty batch
            yield self.table.slice(offset, BATCH_ROWS)


class ParquetBatches:
    """A local Parquet file, each batch conformed to the contract as it is read."""

    def __init__(self, path: str, contract: TableContract):
        import pyarrow.parquet as pq

        from xmdata.runtime import storage

        self.path, self.contract = path, contract
        try:
            self.num_rows = pq.ParquetFile(storage.local(path)).metadata.num_rows
        except (OSError, pa.ArrowException) as exc:
            first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
            raise ContractError(f"{path}: cannot read as parquet: {first_line}") from exc
        if self.num_rows == 0:
            raise ContractError(f"{path}: no rows (the file holds nothing)")

    def _raw(self) -> Iterator[pa.Table]:
        import pyarrow.parquet as pq

        from xmdata.runtime import storage

        with pq.ParquetFile(storage.local(self.path)) as file:
            for batch in file.iter_batches(batch_size=BATCH_ROWS):
                yield apply_active_map(pa.Table.from_batches([batch]), self.path)
                # Arrow's allocator keeps what a batch freed: without this the process grows with
                # the number of batches read (~50 MB more at 2M rows), not with what it holds.
                pa.default_memory_pool().release_unused()

    def check(self) -> None:
        """The whole input against its contract, one batch at a time; every violation named at once.
        A file whose every contract column already has the contract's type is checked from its
        schema alone: no value of it can fail to convert, so reading its rows would find nothing more."""
        import pyarrow.parquet as pq

        from xmdata.runtime import storage

        empty = apply_active_map(pq.read_schema(storage.local(self.path)).empty_table(), self.path)
        if all(field.name not in empty.column_names or empty.schema.field(field.name).type == field.type
               for field in self.contract.schema):
            if found := find_violations(empty, self.contract, self.path):
                raise ContractError(found)
            return
        found = []
        for table in self._raw():
            found += find_violations(table, self.contract, self.path)
        if found:
            raise ContractError(merge_violations(found))

    def batches(self) -> Iterator[pa.Table]:
        """Each batch conformed, as `check` would refuse it: a batch that breaks the contract ends the
        batches handed on, the rest are still read, and every violation is named at once at the end.
        A caller that writes only once the batches are all read (ingest spills them to a private
        temporary folder first) needs no `check` before: one read of the input, not two."""
        found = []
        for table in self._raw():
            violations = find_violations(table, self.contract, self.path)
            found += violations
            if not found:
                yield conform(table, self.contract, source=self.path)
        if found:
            raise ContractError(merge_violations(found))


def open_input(path: str, contract: TableContract) -> ParquetBatches | TableBatches:
    """PATH ready to be read in batches, refused now if it is missing, empty or of no known format;
    call `check()` to refuse it whole when a value breaks the contract."""
    from xmdata.runtime import storage

    from .readers import input_format, read_input

    suffix = input_format(path)
    if suffix in (".parquet", ".pq") and not storage.is_url(path):
        return ParquetBatches(path, contract)
    return TableBatches(read_input(path, contract))
