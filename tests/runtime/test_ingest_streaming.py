"""The ingest reads its input a batch at a time, plans shards by rows, and what a command makes does
not depend on the shard plan; a broken input is still refused whole before anything is written."""
import json
import os
import tracemalloc

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata

from xmdata.runtime import storage
from xmdata.runtime.shards import shard_count, shard_of
from xmdata.schemas import CAPTIONS, ContractError
from xmdata.schemas import input_batches
from xmdata.schemas.input_batches import open_input
from xmdata.schemas.tables import IMAGES
from xmdata.tasks.build.ingest import ingest

SAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "data", "sample", "captions.jsonl")


def captions_file(path, rows, text_chars=8, repeats=()):
    """A captions Parquet file of ROWS rows (ids r0…), with ids REPEATS appended again at the end."""
    ids = [f"r{i}" for i in range(rows)] + [f"r{i}" for i in repeats]
    pq.write_table(pa.table({"id": ids, "text": [f"{i:0{text_chars}d}" for i in range(len(ids))]}), path,
                   row_group_size=997)
    return str(path)


def shard_tables(report):
    return [pq.read_table(p) for p in report.data_paths]


def test_the_plan_takes_at_least_the_shards_asked_and_more_for_a_larger_input(monkeypatch, tmp_path):
    assert [shard_count(rows, 8, 100) for rows in (10, 800, 801, 10_000)] == [8, 8, 9, 100]
    monkeypatch.setenv("XMDATA_SHARD_ROWS", "3")
    report = ingest(pa.table({"id": [f"r{i}" for i in range(40)], "text": ["t"] * 40}), "captions", 2, str(tmp_path))
    assert len(report.records) == 14 and report.rows_out == 40  # ceil(40 / 3)
    for index, shard in enumerate(shard_tables(report)):
        assert all(shard_of(i, 14) == index for i in shard.column("id").to_pylist())
    monkeypatch.setenv("XMDATA_SHARD_ROWS", "0")
    with pytest.raises(ContractError, match="XMDATA_SHARD_ROWS='0': expected a count"):
        ingest(pa.table({"id": ["a"], "text": ["t"]}), "captions", 2, str(tmp_path))


def test_ids_repeated_in_batches_far_apart_are_refused_keeping_the_first(monkeypatch, tmp_path):
    monkeypatch.setattr(input_batches, "BATCH_ROWS", 10)
    monkeypatch.setenv("XMDATA_SHARD_ROWS", "7")
    source = open_input(captions_file(tmp_path / "in.parquet", 60, repeats=(3, 3, 41)), CAPTIONS)
    report = ingest(source, "captions", 1, str(tmp_path / "out"))
    assert report.rejected == {"duplicate_id": 3} and report.rows_out == 60
    kept = pl.concat([pl.from_arrow(t) for t in shard_tables(report)])
    assert kept.filter(pl.col("id") == "r3")["text"].to_list() == ["00000003"]  # the first, not a later copy


def _ingested_holding(path, out):
    """(rows of each batch read, the most Arrow memory held while reading one, tracemalloc's peak)."""
    seen, arrow_peak = [], [0]
    raw = input_batches.ParquetBatches._raw
    base = pa.total_allocated_bytes()

    def watched(self):
        for table in raw(self):
            seen.append(table.num_rows)
            arrow_peak[0] = max(arrow_peak[0], pa.total_allocated_bytes() - base)
            yield table

    input_batches.ParquetBatches._raw = watched
    tracemalloc.start()
    try:
        source = open_input(path, CAPTIONS)
        source.check()
        report = ingest(source, "captions", 1, out)
        python_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        input_batches.ParquetBatches._raw = raw
    return report, seen, arrow_peak[0], python_peak


def test_the_ingest_holds_a_batch_or_a_shard_never_the_whole_input(monkeypatch, tmp_path):
    monkeypatch.setattr(input_batches, "BATCH_ROWS", 1000)
    monkeypatch.setenv("XMDATA_SHARD_ROWS", "1000")

    def refused(*args, **kwargs):
        raise AssertionError("the whole input was read at once")

    monkeypatch.setattr(pq, "read_table", refused)
    monkeypatch.setattr(pq.ParquetFile, "read", refused)
    monkeypatch.setattr(pl, "read_parquet", refused)
    held = {}
    for rows in (5000, 40_000):
        path = captions_file(tmp_path / f"in-{rows}.parquet", rows, text_chars=400)
        report, seen, arrow, python = held[rows] = _ingested_holding(path, str(tmp_path / f"out-{rows}"))
        # Read once, a batch at a time: check() needs only the schema (every column in contract types)
        assert max(seen) == 1000 and sum(seen) == rows
        assert report.rows_out == rows and len(report.records) == rows // 1000
    whole = 40_000 * 408
    (*_, small_arrow, small_python), (*_, arrow, python) = held[5000], held[40_000]
    assert arrow < whole / 3 and python < whole / 3, (arrow, python, whole)
    assert arrow < 2 * small_arrow and python < 2 * small_python  # 8x the rows, not 8x the memory


def test_a_file_in_contract_types_is_checked_from_its_schema_and_any_other_by_its_values(monkeypatch, tmp_path):
    monkeypatch.setattr(input_batches, "BATCH_ROWS", 100)
    seen, raw = [], input_batches.ParquetBatches._raw

    def watched(self):
        for table in raw(self):
            seen.append(table.num_rows)
            yield table

    monkeypatch.setattr(input_batches.ParquetBatches, "_raw", watched)
    open_input(captions_file(tmp_path / "typed.parquet", 1000), CAPTIONS).check()
    assert seen == []  # string id and text: no value can fail to convert
    numbers = tmp_path / "numbered.parquet"
    pq.write_table(pa.table({"id": list(range(1000)), "text": ["a caption"] * 1000}), numbers)
    open_input(str(numbers), CAPTIONS).check()  # int ids convert, but only their values can say so
    assert seen == [100] * 10
    missing = tmp_path / "missing.parquet"
    pq.write_table(pa.table({"id": ["a"], "caption": ["x"]}), missing)
    with pytest.raises(ContractError, match="column 'text': required column is missing"):
        open_input(str(missing), CAPTIONS).check()
    assert seen == [100] * 10


def test_a_value_that_breaks_the_contract_in_a_late_batch_is_refused_with_every_count(monkeypatch, tmp_path):
    monkeypatch.setattr(input_batches, "BATCH_ROWS", 100)
    latitude = ["1.5"] * 1000
    latitude[150], latitude[990] = "north", "south"
    path = tmp_path / "images.parquet"
    pq.write_table(pa.table({"id": [f"i{n}" for n in range(1000)], "latitude": latitude,
                             "longitude": ["2.0"] * 1000}), path)
    with pytest.raises(ContractError, match="column 'latitude': 2 value") as refused:
        open_input(str(path), IMAGES).check()
    assert str(refused.value) == (f"{path}: column 'latitude': 2 value(s) are not double "
                                  "(first offending rows: id='i150', id='i990')")

    # The ingest reads it once, checking each batch as it goes: the same refusal, and no shard written.
    out = tmp_path / "out"
    with pytest.raises(ContractError) as ingested:
        ingest(open_input(str(path), IMAGES), "images", 2, str(out))
    assert str(ingested.value) == str(refused.value)
    assert not (out / "images").exists()


@pytest.mark.parametrize("table, message", [
    (pa.table({"id": ["a", "b"], "caption": ["x", "y"]}), "column 'text': required column is missing"),
    (pa.table({"id": pa.array([], pa.string()), "text": pa.array([], pa.string())}), "no rows"),
])
def test_a_broken_parquet_input_is_refused_in_one_line_before_anything_is_written(cli_env, tmp_path, table, message):
    pq.write_table(table, tmp_path / "in.parquet")
    out = tmp_path / "out"
    result = run_xmdata(["identify-language", tmp_path / "in.parquet", "--out", out, "-q"], cli_env)
    assert result.returncode == 2 and message in result.stderr and "Traceback" not in result.stderr
    assert not out.exists()


def _made(out):
    """What identify-language made, whatever its shard plan: rows by id, rejects, the summary's facts."""
    data = pl.concat([pl.read_parquet(p) for p in storage.glob(os.path.join(out, "language_id", "data", "*"))])
    rejects = pl.concat([pl.read_parquet(p) for p in storage.glob(os.path.join(out, "*", "rejects", "*"))])
    summary = json.load(open(os.path.join(out, "summary.json")))
    return (data.sort("id"), rejects.sort(pl.all()), summary["distributions"],
            summary["stages"])


def test_identify_language_makes_the_same_output_whatever_the_shard_plan(cli_env, tmp_path):
    rows = [json.loads(line) for line in open(SAMPLE)]
    table = pa.Table.from_pylist(rows + [{**rows[0], "text": "a repeat"}, {**rows[1], "id": " "}])
    pq.write_table(table, tmp_path / "in.parquet")
    made = {}
    for cap in (3, 1000):
        out = tmp_path / f"rows-{cap}"
        result = run_xmdata(["identify-language", tmp_path / "in.parquet", "--out", out, "--shards", "1", "-q"],
                            {**cli_env, "XMDATA_SHARD_ROWS": str(cap)})
        assert result.returncode == 0, result.stderr[-2000:]
        made[cap] = _made(out)
        assert len(os.listdir(out / "language_id" / "data")) == (15 if cap == 3 else 1)
    small, large = made[3], made[1000]
    assert small[0].equals(large[0]) and small[1].equals(large[1])
    assert small[0].height + small[1].height == len(table)  # every row kept or refused, once
    assert {"duplicate_id", "empty_id"} <= set(small[1]["reason"].to_list())
    assert small[2] == large[2] and small[3] == large[3]
