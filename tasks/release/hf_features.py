"""Hugging Face `datasets` features of a Parquet table, written with pyarrow alone (`datasets` is a
test dependency only): the JSON the schema metadata's `huggingface` key holds, `{"info": {"features":
…}}`, and the YAML list a card's `dataset_info.features` holds. Both as datasets 5.0.1 writes them
(datasets/features/features.py: `Features.arrow_schema`, `_arrow_to_datasets_dtype`, `_to_yaml_list`);
tests/release/test_embed_images.py checks them against that package's own output."""
from __future__ import annotations

import json

import pyarrow as pa

METADATA_KEY = b"huggingface"
IMAGE = {"_type": "Image"}
IMAGE_TYPE = pa.struct([("bytes", pa.binary()), ("path", pa.string())])  # datasets.Image.pa_type


def value_dtype(t: pa.DataType) -> str:
    """`datasets`' name of a scalar Arrow type (its `_arrow_to_datasets_dtype`)."""
    if pa.types.is_dictionary(t):
        return value_dtype(t.value_type)
    if pa.types.is_timestamp(t):
        return f"timestamp[{t.unit}, tz={t.tz}]" if t.tz else f"timestamp[{t.unit}]"
    if pa.types.is_duration(t):
        return f"duration[{t.unit}]"
    if pa.types.is_decimal(t):
        return f"decimal{t.bit_width}({t.precision}, {t.scale})"
    if pa.types.is_time(t):
        return f"{'time32' if pa.types.is_time32(t) else 'time64'}[{t.unit}]"
    names = {pa.null(): "null", pa.bool_(): "bool", pa.float16(): "float16", pa.float32(): "float32",
             pa.float64(): "float64", pa.date32(): "date32", pa.date64(): "date64"}
    return names.get(t) or str(t)  # int8…uint64, string, large_string, binary, large_binary as Arrow names them


def feature_of(t: pa.DataType, image: bool = False) -> dict:
    """The feature dict of one column's type; IMAGE for an image column (the `{bytes, path}` struct)."""
    if image:
        return dict(IMAGE)
    if pa.types.is_struct(t):
        return {t.field(i).name: feature_of(t.field(i).type) for i in range(t.num_fields)}
    if pa.types.is_large_list(t):
        return {"feature": feature_of(t.value_type), "_type": "LargeList"}
    if pa.types.is_fixed_size_list(t):
        return {"feature": feature_of(t.value_type), "length": t.list_size, "_type": "List"}
    if pa.types.is_list(t):
        return {"feature": feature_of(t.value_type), "_type": "List"}
    return {"dtype": value_dtype(t), "_type": "Value"}


def features_of(schema: pa.Schema, images: frozenset[str] | set[str] = frozenset()) -> dict:
    """{column: feature} of SCHEMA, the columns named in IMAGES as `Image`."""
    return {f.name: feature_of(f.type, f.name in images) for f in schema}


def with_features(schema: pa.Schema, images: set[str]) -> pa.Schema:
    """SCHEMA with its features in the `huggingface` metadata key, as `datasets` reads it back
    (`Features.from_arrow_schema`): without it an image column is a plain struct, and the viewer shows
    no picture."""
    meta = json.dumps({"info": {"features": features_of(schema, images)}})
    return schema.with_metadata({**(schema.metadata or {}), METADATA_KEY: meta.encode()})


def yaml_features(features: dict) -> list[dict]:
    """The card's `dataset_info.features` list of FEATURES (datasets' `Features._to_yaml_list`)."""
    return [{"name": name, **_yaml(feature)} for name, feature in features.items()]


def _yaml(feature: dict) -> dict:
    kind = feature.get("_type")
    if kind in ("List", "LargeList"):
        inner = _yaml(feature["feature"])
        inner = inner["dtype"] if list(inner) == ["dtype"] else inner["struct"] if list(inner) == ["struct"] else inner
        rest = {k: v for k, v in feature.items() if k not in ("_type", "feature")}
        return {"large_list" if kind == "LargeList" else "list": inner, **rest}
    if kind == "Value":
        return {"dtype": feature["dtype"]}
    if kind:
        return {"dtype": kind.lower()}  # Image -> image (camelcase_to_snakecase of a one-word name)
    return {"struct": [{"name": n, **_yaml(f)} for n, f in feature.items()]}
