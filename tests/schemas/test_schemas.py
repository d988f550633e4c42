import json
import re

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


@pytest.mark.parametrize("name, text, message", [
    # Python's json module writes these (json.dumps(float("nan"))); JSON has no such numbers.
    ("in.jsonl", '{"id": "a", "text": "NaN, said the reader"}\n{"id": "b", "text": "x", "score": NaN}\n',
     "in.jsonl:2: NaN is not JSON"),
    ("in.ndjson", '{"id": "a", "text": "x", "score": -Infinity}\n', "in.ndjson:1: -Infinity is not JSON"),
    ("in.json", '[{"id": "a", "text": "\\"NaN\\" Infinity"},\n {"id": "b",\n  "score": Infinity}]\n',
     "in.json:3: Infinity is not JSON"),
])
def test_a_number_json_does_not_have_is_refused_with_its_file_and_line(tmp_path, name, text, message):
    (tmp_path / name).write_text(text)
    with pytest.raises(ContractError, match=re.escape(message)) as refused:
        read_input(str(tmp_path / name), CAPTIONS)
    assert str(refused.value) == f"{tmp_path}/{message}"


def test_wrong_type_that_cannot_cast_is_reported():
    table = pa.table({"id": ["a"], "text": [[1, 2]]})
    with pytest.raises(ContractError, match="column 'text': has type"):
        conform(table, CAPTIONS, "t")


def test_a_language_id_models_labels_map_through_one_stated_table_and_the_raw_label_is_kept():
    import pyarrow as pa

    from xmdata.models.base import ModelSpec
    from xmdata.schemas.languages import is_normalised, label_code
    from xmdata.tasks.translation.language_id import LanguageIdShard, identify_language

    assert [label_code(x) for x in ("tl", "als", "bh", "he", "no", "en")] == ["fil", "gsw", "bho", "he", "no", "en"]
    assert [label_code(x) for x in ("sh", "nah", "eml", "und", None)] == [None] * 5  # no single language: not guessed
    texts = ["Magandang umaga po sa inyong lahat, salamat sa pagdating ninyo dito ngayon.",
             "Der Hund läuft schnell über die grüne Wiese."]
    table = pa.table({"id": ["t", "d"], "text": texts})
    kept, _ = identify_language(table, LanguageIdShard(model=ModelSpec("fasttext", "lid.176"), text_column="text"))
    rows = {r["id"]: r for r in kept.to_pylist()}
    assert rows["t"]["lid_label_raw"] == "tl" and rows["t"]["lid_label"] == "fil"  # the tables' Filipino
    assert rows["d"]["lid_label"] == rows["d"]["lid_label_raw"] == "de"
    assert all(is_normalised(r["lid_label"]) for r in rows.values())
