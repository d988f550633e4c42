"""What the translation build reads: an id and text columns, plain or list, turned into units.

A unit is one string to translate. A list column (several references per image) gives one unit per
element; an empty or missing value gives one unit that is refused as `empty_text`, so that every
input value is accounted for in the outputs.
"""
from __future__ import annotations

import re

import pyarrow as pa

from xmdata.schemas import ContractError, TableContract
from xmdata.schemas.readers import read_any
from xmdata.schemas.validate import conform

# A sentence ends at . ! ? or their CJK/Devanagari forms, followed by space or the end of the text.
SENTENCE_END = re.compile(r"(?<=[.!?。！？।])\s+|(?<=[。！？])")


def is_list_type(dtype: pa.DataType) -> bool:
    return pa.types.is_list(dtype) or pa.types.is_large_list(dtype) or pa.types.is_fixed_size_list(dtype)


def read_translation_input(source: str | pa.Table, columns: list[str]) -> tuple[pa.Table, list[str]]:
    """(id + the named columns, conformed to string / list<string>; names of the list columns)."""
    if not columns:
        raise ContractError("name at least one text column to translate (--columns)")
    raw = source if isinstance(source, pa.Table) else read_any(source)
    name = "input table" if isinstance(source, pa.Table) else source
    fields = [pa.field("id", pa.string())]
    for column in columns:
        dtype = raw.schema.field(column).type if column in raw.column_names else pa.string()
        fields.append(pa.field(column, pa.list_(pa.string()) if is_list_type(dtype) else pa.string()))
    contract = TableContract("translation_input", pa.schema(fields), required=frozenset({"id", *columns}),
                             text_columns=frozenset(f.name for f in fields[1:] if f.type == pa.string()))
    table = conform(raw, contract, source=name).select(["id", *columns])
    return table, [f.name for f in fields[1:] if is_list_type(f.type)]


def split_sentences(text: str) -> list[str]:
    return [part for part in SENTENCE_END.split(text.strip()) if part.strip()] or [text]


def explode_units(table: pa.Table, columns: list[str]) -> pa.Table:
    """One row per (id, column, element) with its text; element is null for a plain text column."""
    ids, names, elements, texts = [], [], [], []
    for column in columns:
        values = table.column(column).to_pylist()
        is_list = is_list_type(table.schema.field(column).type)
        for row_id, value in zip(table.column("id").to_pylist(), values):
            parts = list(enumerate(value)) if is_list and value else [(None, None if is_list else value)]
            for element, text in parts:
                ids.append(row_id)
                names.append(column)
                elements.append(element)
                texts.append(text)
    return pa.table({"id": pa.array(ids, pa.string()), "column": pa.array(names, pa.string()),
                     "element": pa.array(elements, pa.int32()), "source_text": pa.array(texts, pa.string())})
