"""`xmdata release compare A B`: are two releases the same data, floats within a tolerance?

On one platform a release is byte-identical; on another CPU, BLAS or torch build a model's outputs
move in their last digits. So tables are matched row by row on their ids: every id, text, label,
count and decision must be equal, a float may differ by the tolerance. polars, pyarrow and the
manifest helpers are imported where they are used: the CLI reads TOLERANCE for its --help, which
stays light.
"""
from __future__ import annotations

import filecmp
import json
import math
import os
from dataclasses import dataclass, field

# The default largest absolute difference between two floats taken as equal. Not ranking.TIE (1e-6,
# a cosine's kernel noise within one machine): this bounds a whole model's outputs across machines.
TOLERANCE = 1e-5
SHOWN = 10  # difference lines shown per file; the others are counted
VOLATILE = ("built_at", "platform", "release_sha256")  # manifest.json: when, where, and a hash of bytes
_TRANSLATION_KEY = ("id", "column", "element", "target_language")
_CANDIDATE_KEY = ("id", "column", "element", "segment", "target_language", "beam_rank")
# The columns that identify a row of each published table (tasks/release/files.py TABLES); rows
# repeating a key are told apart by their order. Others (rejects) are matched on all non-float columns.
KEYS = {
    "captions": ("id",), "clip_scores": ("id",), "benchmark_pairs_scored": ("id",),
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
}


@dataclass
class FileResult:
    differences: int = 0
    lines: list[str] = field(default_factory=list)  # the first SHOWN differences
    rows: int | None = None  # a table's rows (in A)
    max_float: tuple[float, str | None] | None = None  # a table's largest float difference, its column

    def add(self, lines: list[str], count: int | None = None) -> None:
        self.differences += len(lines) if count is None else count
        self.lines += lines[:SHOWN - len(self.lines)]


@dataclass
class Comparison:
    tolerance: float
    files: dict[str, FileResult]

    @property
    def differences(self) -> int:
        return sum(r.differences for r in self.files.values())

    def lines(self) -> list[str]:
        """One line per difference, at most SHOWN per file, then how many more."""
        out = []
        for name, result in self.files.items():
            out += [f"{name}: {line}" for line in result.lines]
            if result.differences > len(result.lines):
                out.append(f"{name}: … and {result.differences - len(result.lines)} more differences")
        return out

    def summary(self) -> list[str]:
        tables = {n: r for n, r in self.files.items() if r.rows is not None}
        out = [f"{name}: {r.rows} rows" + (f", max float difference {r.max_float[0]:.3g}"
                                           + (f" ({r.max_float[1]})" if r.max_float[0] else "")
                                           if r.max_float else "") for name, r in tables.items()]
        return out + [f"{len(tables)} tables ({sum(r.rows for r in tables.values())} rows) and "
                      f"{len(self.files) - len(tables)} other files: the same, floats within {self.tolerance:g}"]


def compare_releases(a: str, b: str, tolerance: float = TOLERANCE) -> Comparison:
    """Every difference between releases A and B; ContractError when either is not a release."""
    from xmdata.schemas import ContractError

    from .manifest import MANIFEST

    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise ContractError(f"the tolerance is a finite number of at least 0, got {tolerance}")
    (manifest_a, files_a), (manifest_b, files_b) = _release(a), _release(b)
    files = {}
    for name in sorted(set(files_a) | set(files_b)):
        if name in files_a and name in files_b:
            try:
                files[name] = compare_file(name, os.path.join(a, name), os.path.join(b, name), tolerance)
            except OSError as exc:
                files[name] = FileResult(1, [f"unreadable ({_first_line(exc)})"])
        else:
            files[name] = FileResult(1, [f"only in {'A' if name in files_a else 'B'}"])
    files[MANIFEST] = FileResult()
    files[MANIFEST].add(json_differences(_lasting(manifest_a), _lasting(manifest_b), tolerance))
    return Comparison(tolerance, files)


def _release(folder: str) -> tuple[dict, list[str]]:
    """A release's manifest and files (its build folder left out), or a one-line ContractError."""
    from xmdata.schemas import ContractError

    from .manifest import MANIFEST, release_files

    if not os.path.isfile(os.path.join(folder, MANIFEST)):
        raise ContractError(f"{folder}: not a release (no {MANIFEST})")
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as file:
            manifest = json.load(file)
        work = manifest["release"].get("work_folder")
        return manifest, release_files(folder, {work} if work else set())
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ContractError(f"{folder}: unreadable release ({_first_line(exc)})") from None


def _lasting(manifest: dict) -> dict:
    """The manifest without when and where it was built, nor its files' checksums: the files
    themselves are compared, so a table whose floats moved within tolerance is not a difference."""
    kept = {k: v for k, v in manifest.items() if k not in VOLATILE}
    if isinstance(kept.get("release"), dict):
        kept["release"] = {k: v for k, v in kept["release"].items() if k != "files"}
    return kept


def compare_file(name: str, path_a: str, path_b: str, tolerance: float) -> FileResult:
    """Parquet by rows and values, JSON by values (numbers within tolerance), the rest by bytes."""
    if name.endswith(".parquet"):
        return compare_tables(name, path_a, path_b, tolerance)
    result = FileResult()
    if filecmp.cmp(path_a, path_b, shallow=False):
        return result
    with open(path_a, "rb") as file_a, open(path_b, "rb") as file_b:
        data_a, data_b = file_a.read(), file_b.read()
    if name.endswith(".json"):
        try:
            result.add(json_differences(json.loads(data_a), json.loads(data_b), tolerance))
            return result
        except ValueError:
            pass  # not JSON (any more): bytes
    result.add([_first_difference(data_a, data_b)])
    return result


def json_differences(a, b, tolerance: float, path: str = "") -> list[str]:
    """Where A and B differ: numbers by more than the tolerance, anything else at all."""
    where = path or "(top)"
    if _number(a) and _number(b):
        return [] if _close(a, b, tolerance) else [f"{where}: {_show(a)} (A) != {_show(b)} (B)"]
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            inner = f"{path}.{key}" if path else str(key)
            out += (json_differences(a[key], b[key], tolerance, inner) if key in a and key in b
                    else [f"{inner}: only in {'A' if key in a else 'B'}"])
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [] if len(a) == len(b) else [f"{where}: {len(a)} items (A) != {len(b)} (B)"]
        for i, (x, y) in enumerate(zip(a, b)):
            out += json_differences(x, y, tolerance, f"{path}[{i}]")
        return out
    return [] if type(a) is type(b) and a == b else [f"{where}: {_show(a)} (A) != {_show(b)} (B)"]


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(x: float, y: float, tolerance: float) -> bool:
    return x == y or abs(x - y) <= tolerance or (math.isnan(x) and math.isnan(y))


def _first_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}"


def _show(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def _first_difference(data_a: bytes, data_b: bytes) -> str:
    try:
        lines_a, lines_b = data_a.decode().splitlines(), data_b.decode().splitlines()
    except UnicodeDecodeError:
        return f"differs ({len(data_a)} bytes in A, {len(data_b)} in B)"
    for number, (x, y) in enumerate(zip(lines_a + [None], lines_b + [None]), 1):
        if x != y:
            return f"line {number}: {_show(x)} (A) != {_show(y)} (B)"
    return "differs in line endings"


def compare_tables(name: str, path_a: str, path_b: str, tolerance: float) -> FileResult:
    """Schemas, row counts, the rows only one side has (matched on KEYS), and every value that differs."""
    import polars as pl
    import pyarrow.parquet as pq

    try:
        if filecmp.cmp(path_a, path_b, shallow=False):
            return _identical_table(pq.ParquetFile(path_a))
        schema_a, schema_b = pq.read_schema(path_a), pq.read_schema(path_b)
        frame_a, frame_b = pl.read_parquet(path_a), pl.read_parquet(path_b)
    except (OSError, ValueError, pl.exceptions.PolarsError) as exc:  # ArrowInvalid is a ValueError
        return FileResult(1, [f"unreadable ({_first_line(exc)})"])
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
    if declared and all(c in schema for c in declared):
        return list(declared)
    return [c for c, t in schema.items() if not (t.is_float() or t.is_nested())]


def _matched(frame_a, frame_b, key: list[str]):
    """A full join on the key and each row's rank among rows of the same key; __a/__b: which side has it."""
    import polars as pl

    def numbered(frame, side):
        rank = pl.int_range(pl.len()).over(key) if key else pl.int_range(pl.len())
        return frame.with_columns(rank.alias("__n"), pl.lit(True).alias(side))
    return numbered(frame_a, "__a").join(numbered(frame_b, "__b"), on=[*key, "__n"], how="full", coalesce=True,
                                         suffix="_b", nulls_equal=True, maintain_order="left_right")


def _value_differences(result: FileResult, both, columns: list[str], key: list[str], tolerance: float) -> None:
    """Each value of matched rows that differs (floats: by more than the tolerance); the largest float difference."""
    import polars as pl

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
    import polars as pl

    return (pl.col(column).cast(pl.Float64) - pl.col(column + "_b").cast(pl.Float64)).abs()


def _differs(both, column: str, tolerance: float):
    """True where the two sides' values differ: floats by more than the tolerance, the rest at all."""
    import polars as pl

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
    return f"{_label(row, key)}: {column} {_show(a)} (A) != {_show(b)} (B){gap}"
