"""ParquetStream: a file written a table at a time is the file written whole, and appears only whole."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime.atomic import ROW_GROUP_ROWS, ParquetStream, write_parquet_atomic


def _table(rows: int, seed: int = 0) -> pa.Table:
    rng = np.random.default_rng(seed)
    return pa.table({"id": [f"r{i:07d}" for i in range(rows)],
                     "score": pa.array(rng.random(rows), pa.float32()),
                     "element": pa.array([None if i % 3 else i for i in range(rows)], pa.int32())})


@pytest.mark.parametrize("rows", [0, 7, ROW_GROUP_ROWS, ROW_GROUP_ROWS + 5, 2 * ROW_GROUP_ROWS + 333])
def test_streamed_in_any_pieces_is_the_whole_file_byte_for_byte(rows, tmp_path):
    table = _table(rows)
    write_parquet_atomic(table, str(tmp_path / "whole.parquet"))
    rng = np.random.default_rng(rows)
    with ParquetStream(str(tmp_path / "streamed.parquet"), table.schema) as stream:
        start = 0
        while start < rows:
            size = int(rng.integers(1, 20_000))
            stream.write(table.slice(start, size))
            start += size
    assert (tmp_path / "streamed.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    assert stream.rows == rows
    assert sorted(os.listdir(tmp_path)) == ["streamed.parquet", "whole.parquet"]  # no temp file left


def test_a_failure_midway_leaves_no_file_and_no_temp_file(tmp_path):
    path = tmp_path / "out" / "t.parquet"
    with pytest.raises(RuntimeError):
        with ParquetStream(str(path), _table(1).schema) as stream:
            stream.write(_table(ROW_GROUP_ROWS + 1))  # a row group already on disk
            raise RuntimeError("killed")
    assert os.listdir(tmp_path / "out") == []


def test_as_written_keeps_each_piece_its_own_row_groups(tmp_path):
    table = _table(3000)
    with ParquetStream(str(tmp_path / "t.parquet"), table.schema, as_written=True) as stream:
        for start in (0, 1000, 2500):
            stream.write(table.slice(start, {0: 1000, 1000: 1500, 2500: 500}[start]))
        stream.write(table.slice(0, 0))  # an empty piece adds no row group
    meta = pq.ParquetFile(tmp_path / "t.parquet").metadata
    assert [meta.row_group(i).num_rows for i in range(meta.num_row_groups)] == [1000, 1500, 500]
    assert pq.read_table(tmp_path / "t.parquet").equals(table)
