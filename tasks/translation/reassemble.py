"""The translated dataset in the input's own shape: one row per id and target language, every text
column translated, list columns rebuilt element by element in their original order.

A row appears only when every one of its texts was kept: a caption whose third reference failed is
not shipped with two references. Each failed part is in translations.parquet with its reason.
"""
from __future__ import annotations

import polars as pl
import pyarrow as pa


def reassemble(translations: pa.Table, columns: list[str], list_columns: list[str]) -> pa.Table:
    frame = pl.from_arrow(translations)
    complete = frame.group_by("id", "target_language").agg(
        (pl.col("status") == "ok").all().alias("complete"), pl.col("qe_score").min().alias("min_qe_score"))
    kept = frame.join(complete.filter("complete"), on=["id", "target_language"]).sort(
        ["target_language", "id", "column", "element"])
    rows = complete.filter("complete").select("id", "target_language", "min_qe_score")
    for column in columns:
        part = kept.filter(pl.col("column") == column)
        if column in list_columns:
            part = part.group_by("id", "target_language", maintain_order=True).agg(pl.col("text").alias(column))
        else:
            part = part.select("id", "target_language", pl.col("text").alias(column))
        rows = rows.join(part, on=["id", "target_language"], how="left")
    rows = rows.sort(["target_language", "id"]).select("id", "target_language", *columns, "min_qe_score")
    return rows.to_arrow().cast(reassembled_schema(columns, list_columns))


def reassembled_schema(columns: list[str], list_columns: list[str]) -> pa.Schema:
    return pa.schema([pa.field("id", pa.string()), pa.field("target_language", pa.string())]
                     + [pa.field(c, pa.list_(pa.string()) if c in list_columns else pa.string()) for c in columns]
                     + [pa.field("min_qe_score", pa.float32())])
