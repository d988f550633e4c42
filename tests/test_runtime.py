import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime.atomic import sha256_file, write_parquet_atomic
from xmdata.runtime.process import process_shard
from xmdata.runtime.records import finished_record
from xmdata.runtime.shards import ShardPaths, shard_of, split_into_shards
from xmdata.runtime.stage import Stage
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.build.rejects import make_rejects, no_rejects
from xmdata.tasks.build.rows import reject_bad_ids


def upper(table, params):
    text = [t.upper() for t in table.column("text").to_pylist()]
    return table.set_column(1, "text", pa.array(text)), make_rejects("upper", "never", [])


def sample(n=40):
    return pa.table({"id": [f"r{i}" for i in range(n)], "text": [f"row {i}" for i in range(n)]})


def test_shard_assignment_is_stable_and_order_free():
    table = sample()
    shards = split_into_shards(table, "id", 4)
    assert sum(s.num_rows for s in shards) == 40
    reversed_shards = split_into_shards(table.take(list(range(39, -1, -1))), "id", 4)
    for a, b in zip(shards, reversed_shards):
        assert sorted(a.column("id").to_pylist()) == sorted(b.column("id").to_pylist())
        assert a.column("id").to_pylist() == sorted(a.column("id").to_pylist(), key=lambda k: int(k[1:]))
    for index, shard in enumerate(shards):  # every row sits in the shard its id alone names
        assert all(shard_of(k, 4) == index for k in shard.column("id").to_pylist())
    assert split_into_shards(table, "id", 1)[0].equals(table)


def test_atomic_write_leaves_only_the_file_or_nothing(tmp_path):
    write_parquet_atomic(pa.table({"x": [1]}), str(tmp_path / "d" / "out.parquet"))
    assert os.listdir(tmp_path / "d") == ["out.parquet"]  # no temp file left behind
    with pytest.raises(Exception):
        write_parquet_atomic("not a table", str(tmp_path / "e" / "out.parquet"))
    assert os.listdir(tmp_path / "e") == []


def test_process_shard_writes_record_last_and_detects_changes(tmp_path):
    src = tmp_path / "in" / "shard-00003.parquet"
    write_parquet_atomic(sample(5), str(src))
    stage = Stage("upper", "1", upper, {"k": 1})
    record = process_shard(stage, str(src), str(tmp_path), 3)
    paths = ShardPaths(str(tmp_path), "upper", 3)
    assert record == json.load(open(paths.record))
    assert record["rows_in"] == record["rows_out"] == 5
    assert pq.read_table(paths.data).column("text")[0].as_py() == "ROW 0"
    input_sha = sha256_file(str(src))
    assert finished_record(stage, paths, input_sha) == record
    assert finished_record(Stage("upper", "1", upper, {"k": 2}), paths, input_sha) is None
    assert finished_record(Stage("upper", "2", upper, {"k": 1}), paths, input_sha) is None
    assert finished_record(stage, paths, "other-input") is None
    with open(paths.data, "ab") as f:  # a damaged output is redone, not trusted
        f.write(b"x")
    assert finished_record(stage, paths, input_sha) is None


def test_bad_ids_are_rejected_with_reasons():
    table = pa.table({"id": ["a", "", None, "b", "a", " "], "text": list("123456")})
    kept, rejects = reject_bad_ids(table, "ingest")
    assert kept.column("id").to_pylist() == ["a", "b"]
    assert kept.column("text").to_pylist() == ["1", "4"]
    assert sorted(rejects.column("reason").to_pylist()) == ["duplicate_id", "empty_id", "empty_id", "empty_id"]
    assert set(rejects.column("stage").to_pylist()) == {"ingest"}


def test_ingest_skips_finished_shards_and_counts_them(tmp_path):
    table = pa.table({"id": ["a", "a", "b", "c"], "text": ["1", "2", "3", "4"]})
    first = ingest(table, "captions", 3, str(tmp_path))
    assert (first.shards_run, first.shards_skipped) == (3, 0)
    assert first.rows_out == 3 and first.rejected == {"duplicate_id": 1}
    os.remove(ShardPaths(str(tmp_path), "captions", 1).record)
    second = ingest(table, "captions", 3, str(tmp_path))
    assert (second.shards_run, second.shards_skipped) == (1, 2)
    assert second.records == first.records
    assert no_rejects().num_rows == 0


def test_fewer_shards_on_rerun_leave_no_stale_shards(tmp_path):
    table = pa.table({"id": [f"r{i}" for i in range(30)], "text": ["t"] * 30})
    ingest(table, "captions", 6, str(tmp_path))
    report = ingest(table, "captions", 3, str(tmp_path))
    for kind in ("data", "rejects", "_done"):
        assert len(os.listdir(tmp_path / "captions" / kind)) == 3
    assert report.rows_out == 30


def test_positive_shard_and_worker_counts_only(capsys):
    from xmdata.cli import main

    for bad in (["--shards", "0"], ["--workers", "-1"]):
        with pytest.raises(SystemExit) as exit_info:
            main(["demo", *bad])
        assert exit_info.value.code == 2
    assert "must be at least 1" in capsys.readouterr().err


def test_a_named_prefect_api_is_used_as_is_and_the_environment_restored(monkeypatch):
    from prefect.settings import PREFECT_API_URL

    from xmdata.runtime.prefect_api import prefect_api

    monkeypatch.setenv("PREFECT_API_URL", "http://127.0.0.1:1/api")
    with prefect_api(url="http://127.0.0.1:2/api") as url:  # no server is started for a named API
        assert url == os.environ["PREFECT_API_URL"] == PREFECT_API_URL.value() == "http://127.0.0.1:2/api"
    assert os.environ["PREFECT_API_URL"] == "http://127.0.0.1:1/api"
