"""ParquetStream: a file written a table at a time is the file written whole, and appears only whole;
parquet_shards: shards gathered into one file and read back one at a time."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime import parquet_shards
from xmdata.runtime.atomic import ROW_GROUP_ROWS, ParquetStream, write_parquet_atomic
from xmdata.schemas import ContractError


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
    with pytest.raises(RuntimeError, match="^killed$"):
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


def test_shards_gathered_into_one_file_come_back_one_at_a_time(tmp_path, monkeypatch):
    monkeypatch.setattr(parquet_shards, "READ_ROWS", 100)  # shards over several reads, and reads over shards
    table = _table(1000)
    sizes = [0, 250, 3, 0, 600, 147, 0]  # empty ones first, between and last
    paths, start = [], 0
    for index, size in enumerate(sizes):
        paths.append(str(tmp_path / f"{index}.parquet"))
        pq.write_table(table.slice(start, size), paths[-1])
        start += size
    gathered = str(tmp_path / "all.parquet")
    assert parquet_shards.concat_parquet_files(paths, gathered) == sizes
    shards = list(parquet_shards.read_parquet_shards(gathered))
    assert [s.num_rows for s in shards] == sizes
    assert pa.concat_tables(shards).equals(table)
    pq.write_table(table, tmp_path / "plain.parquet")  # not gathered so (an older xmdata's): one shard
    assert [s.num_rows for s in parquet_shards.read_parquet_shards(str(tmp_path / "plain.parquet"))] == [1000]


def test_a_gathered_file_whose_recorded_shards_do_not_add_up_is_refused(tmp_path):
    table = _table(10)
    with ParquetStream(str(tmp_path / "t.parquet"), table.schema, as_written=True) as stream:
        stream.write(table)
        stream.key_values[parquet_shards.SHARD_ROWS_KEY] = "[4, 5]"
    with pytest.raises(ContractError, match="altered after it was written"):
        list(parquet_shards.read_parquet_shards(str(tmp_path / "t.parquet")))


def test_the_sweep_removes_what_a_killed_run_left_and_nothing_else(tmp_path):
    from xmdata.runtime.atomic import local_temp_folder
    from xmdata.runtime.folder_lock import remove_stray_temp_files

    kept = tmp_path / "sub" / "data.parquet"
    kept.parent.mkdir()
    kept.write_bytes(b"data")
    (tmp_path / "sub" / ".tmp-xmdata-mine").mkdir()  # a user's, not at the output's top: kept
    (tmp_path / ".tmp-user").mkdir()  # not the selection's prefix: kept
    (tmp_path / "sub" / ".tmp-abc.part").write_bytes(b"half")
    left = local_temp_folder(str(tmp_path))  # a selection's folder, its run killed before the cleanup
    (tmp_path / os.path.basename(left.name) / "000000.parquet").write_bytes(b"units")
    assert oct(os.stat(left.name).st_mode & 0o777) == "0o700"  # private to the run's owner
    assert remove_stray_temp_files(str(tmp_path)) == 2
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*")) == [
        ".tmp-user", "sub", "sub/.tmp-xmdata-mine", "sub/data.parquet"]


def test_small_shards_go_on_together_and_none_is_split():
    whole = _table(184)
    sizes, starts = (5, 0, 30, 40, 7, 100, 2), np.cumsum([0, 5, 0, 30, 40, 7, 100])
    shards = [whole.slice(start, size) for start, size in zip(starts, sizes)]
    tables = list(parquet_shards.together(iter(shards), rows=40))
    assert [t.num_rows for t in tables] == [35, 40, 7, 100, 2]  # 5+0+30 | 40 | 7 | 100 (over 40: alone) | 2
    assert pa.concat_tables(tables).equals(pa.concat_tables(shards))
