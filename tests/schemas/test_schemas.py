import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.schemas import CAPTIONS, IMAGES, ContractError
from xmdata.schemas.readers import read_input
from xmdata.schemas.validate import conform, find_violations


def test_every_violation_is_reported_with_columns_and_rows():
    table = pa.table({"id": ["a", "b", "c", "d"], "latitude": ["1.0", "north", "2", "x"]})
    violations = find_violations(table, IMAGES, "in.csv")
    by_column = {v.column: v for v in violations}
    assert set(by_column) == {"longitude", "latitude"}
    assert by_column["longitude"].problem == "required column is missing"
    assert by_column["latitude"].row_ids == ("id='b'", "id='d'")
    assert "2 value(s) are not double" in str(by_column["latitude"])


def test_conform_casts_orders_and_keeps_extra_columns():
    table = pa.table({"extra": [1, 2], "text": ["x", "y"], "id": [10, 11]})
    out = conform(table, CAPTIONS, "t")
    assert out.column_names == ["id", "text", "language", "image_id", "extra"]
    assert out.schema.field("id").type == pa.string()
    assert out.column("id").to_pylist() == ["10", "11"]
    assert out.column("language").null_count == 2


@pytest.mark.parametrize("suffix", ["parquet", "csv", "jsonl"])
def test_readers_give_the_same_conformed_table(tmp_path, suffix):
    rows = [{"id": "a", "text": "Bonjour", "language": "fr"}, {"id": "b", "text": "Hi", "language": "en"}]
    path = tmp_path / f"in.{suffix}"
    if suffix == "parquet":
        pq.write_table(pa.Table.from_pylist(rows), path)
    elif suffix == "csv":
        path.write_text("id,text,language\na,Bonjour,fr\nb,Hi,en\n")
    else:
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = read_input(str(path), CAPTIONS)
    assert table.select(["id", "text", "language"]).to_pylist() == rows


def test_missing_file_and_unknown_format_and_garbage_name_the_file(tmp_path):
    with pytest.raises(ContractError, match="nope.csv: file not found"):
        read_input(str(tmp_path / "nope.csv"), CAPTIONS)
    (tmp_path / "x.xlsx").write_text("")
    with pytest.raises(ContractError, match="unknown format"):
        read_input(str(tmp_path / "x.xlsx"), CAPTIONS)
    (tmp_path / "bad.parquet").write_bytes(b"not parquet at all")
    with pytest.raises(ContractError, match="bad.parquet: cannot read as parquet"):
        read_input(str(tmp_path / "bad.parquet"), CAPTIONS)


def test_wrong_type_that_cannot_cast_is_reported():
    table = pa.table({"id": ["a"], "text": [[1, 2]]})
    with pytest.raises(ContractError, match="column 'text': has type"):
        conform(table, CAPTIONS, "t")
