"""A published table of two releases compared (`xmdata release compare`): schemas, row counts, the
rows only one side has, matched on the table's id columns, and every value that differs, floats by
more than the tolerance."""
from __future__ import annotations

import filecmp
import os

import polars as pl
import pyarrow.parquet as pq

from .compare_files import SHOWN, FileResult, first_line, json_differences, show_value

_TRANSLATION_KEY = ("id", "column", "element", "target_language")
# engine: a pool's candidates are one table (tasks/translation/pool.py); a release made before the
# column has none, and is matched without it.
_CANDIDATE_KEY = ("id", "column", "element", "segment", "target_language", "engine", "beam_rank")
OPTIONAL_KEY_COLUMNS = {"engine"}
# The columns that identify a row of each published table (tasks/release/files.py TABLES); rows
# repeating a key are told apart by their order. Others (rejects) are matched on all non-float columns.
KEYS = {
    "captions": ("id",), "clip_scores": ("id",), "benchmark_pairs_scored": ("id",), "image_downloads": ("id",),
    "rated_pairs": ("id",),
    "images": ("language", "image_id"), "images_optimal": ("language", "image_id"),
    "images_per_language": ("language",), "images_per_language_optimal": ("language",),
    "translations": _TRANSLATION_KEY, "benchmark_translations": _TRANSLATION_KEY,
    "translated_captions": ("id", "target_language"),
    "translation_candidates": _CANDIDATE_KEY, "benchmark_translation_candidates": _CANDIDATE_KEY,
    "qa_parallel": ("id", "task", "part", "target_language"),
    "qa_counts": ("task", "target_language", "outcome"),
    "benchmark_results": ("benchmark", "metric", "measure"),
    "mmmeb_queries": ("task", "dataset", "language", "id"),
    "mmmeb_candidates": ("task", "dataset", "language", "id"),
    "mmmeb_tasks": ("task", "dataset", "language"),
    "mmmeb_results": ("system", "task", "dataset", "language"),
    "clean_matches": ("check", "table", "id", "method", "match_source", "match_id"),
}


def compare_tables(name: str, path_a: str, path_b: str, tolerance: float) -> FileResult:
    """Schemas, row counts, the rows only one side has (matched on KEYS), and every value that differs."""
    try:
        if filecmp.cmp(path_a, path_b, shallow=False):
            return _identical_table(pq.ParquetFile(path_a))
        schema_a, schema_b = pq.read_schema(path_a), pq.read_schema(path_b)
        frame_a, frame_b = pl.read_parquet(path_a), pl.read_parquet(path_b)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # ArrowInvalid is a ValueError
        return FileResult(1, [f"unreadable ({first_line(exc)})"])
    result = FileResult(rows=frame_a.height)
    result.add(_schema_differences(schema_a, schema_b))
    if frame_a.height != frame_b.height:
        result.add([f"{frame_a.height} rows (A) != {frame_b.height} (B)"])
    common = [c for c in frame_a.columns if c in frame_b.columns and frame_a.schema[c] == frame_b.schema[c]]
    key = _key(name, frame_a.select(common).schema)
    joined = _matched(frame_a.select(common), frame_b.select(common), key)
    only = joined.filter(pl.col("__a").is_null() | pl.col("__b").is_null())
    result.add([f"{_label(row, key)}: only in {'B' if row['__a'] is None else 'A'}"
                for row in only.head(SHOWN).iter_rows(named=True)], only.height)
    both = joined.filter(pl.col("__a").is_not_null() & pl.col("__b").is_not_null())
    _value_differences(result, both, [c for c in common if c not in key], key, tolerance)
    return result


def _identical_table(parquet) -> FileResult:
    floats = [f.name for f in parquet.schema_arrow if str(f.type) in ("halffloat", "float", "double")]
    return FileResult(rows=parquet.metadata.num_rows, max_float=(0.0, None) if floats else None)


def _schema_differences(schema_a, schema_b) -> list[str]:
    types_a, types_b = ({f.name: str(f.type) for f in s} for s in (schema_a, schema_b))
    out = [f"column {c!r} only in {'A' if c in types_a else 'B'}" for c in sorted(set(types_a) ^ set(types_b))]
    out += [f"column {c!r}: {types_a[c]} (A) != {types_b[c]} (B)" for c in types_a
            if c in types_b and types_a[c] != types_b[c]]
    if not out and schema_a.names != schema_b.names:
        out.append(f"column order: {schema_a.names} (A) != {schema_b.names} (B)")
    return out


def _key(name: str, schema) -> list[str]:
    """The table's declared id columns, or else every scalar column that is not a float."""
    folder, file = os.path.split(name)
    declared = KEYS.get(file[:-len(".parquet")]) if folder == "data" else None
    declared = declared and [c for c in declared if c in schema or c not in OPTIONAL_KEY_COLUMNS]
    if declared and all(c in schema for c in declared):
        return list(declared)
    return [c for c, t in schema.items() if not (t.is_float() or t.is_nested())]


def _matched(frame_a, frame_b, key: list[str]):
    """A full join on the key and each row's rank among rows of the same key; __a/__b: which side has it."""
    def numbered(frame, side):
        rank = pl.int_range(pl.len()).over(key) if key else pl.int_range(pl.len())
        return frame.with_columns(rank.alias("__n"), pl.lit(True).alias(side))
    return numbered(frame_a, "__a").join(numbered(frame_b, "__b"), on=[*key, "__n"], how="full", coalesce=True,
                                         suffix="_b", nulls_equal=True, maintain_order="left_right")


def _value_differences(result: FileResult, both, columns: list[str], key: list[str], tolerance: float) -> None:
    """Each value of matched rows that differs (floats: by more than the tolerance); the largest float difference."""
    flags = both.with_columns([_differs(both, c, tolerance).alias("__d_" + c) for c in columns])
    counts = flags.select([pl.col("__d_" + c).sum() for c in columns]).row(0) if columns else ()
    if sum(counts):
        shown = flags.filter(pl.any_horizontal([pl.col("__d_" + c) for c in columns])).head(SHOWN)
        result.add([_cell(row, c, key, tolerance) for row in shown.iter_rows(named=True)
                    for c in columns if row["__d_" + c]], sum(counts))
    floats = [c for c in columns if both.schema[c].is_float()]
    if floats:
        gaps = both.select([_gap(c).filter(_gap(c).is_finite()).max().alias(c) for c in floats]).row(0, named=True)
        result.max_float = max(((gap or 0.0, c) for c, gap in gaps.items()), key=lambda g: g[0])


def _gap(column: str):
    return (pl.col(column).cast(pl.Float64) - pl.col(column + "_b").cast(pl.Float64)).abs()


def _differs(both, column: str, tolerance: float):
    """True where the two sides' values differ: floats by more than the tolerance, the rest at all."""
    dtype, a, b = both.schema[column], pl.col(column), pl.col(column + "_b")
    if dtype.is_float():
        close = (a == b) | (_gap(column) <= tolerance) | (a.is_nan() & b.is_nan())
        return (a.is_null() != b.is_null()) | (a.is_not_null() & b.is_not_null() & ~close)
    if _holds_floats(dtype):  # a list or struct of floats: rare, compared value by value
        return pl.lit(pl.Series([bool(json_differences(x, y, tolerance)) for x, y in
                                 zip(both[column].to_list(), both[column + "_b"].to_list())], dtype=pl.Boolean))
    return a.ne_missing(b)


def _holds_floats(dtype) -> bool:
    inner = [getattr(dtype, "inner", None)] + [f.dtype for f in getattr(dtype, "fields", None) or []]
    return any(t is not None and (t.is_float() or _holds_floats(t)) for t in inner)


def _label(row: dict, key: list[str]) -> str:
    if not key:
        return f"row {row['__n'] + 1}"
    return ", ".join(f"{c}={row[c]!r}" for c in key) + (f" (repeat {row['__n'] + 1})" if row["__n"] else "")


def _cell(row: dict, column: str, key: list[str], tolerance: float) -> str:
    a, b = row[column], row[column + "_b"]
    gap = f" (|Δ| {abs(a - b):.3g} > {tolerance:g})" if isinstance(a, float) and isinstance(b, float) else ""
    return f"{_label(row, key)}: {column} {show_value(a)} (A) != {show_value(b)} (B){gap}"
