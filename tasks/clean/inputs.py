"""What `dedup` and `contamination` check: an images table (id, path) or a captions table (id, text,
language), told apart by its columns, read and conformed whole before anything is written."""
from __future__ import annotations

import os

import pyarrow as pa

from xmdata.runtime import storage
from xmdata.schemas import ContractError
from xmdata.schemas.clean import CLEAN_CAPTIONS, CLEAN_IMAGES
from xmdata.schemas.languages import language_code
from xmdata.schemas.readers import read_any
from xmdata.schemas.validate import conform

KINDS = ("images", "captions")
RESOLVED = "resolved_path"  # where an image's file is read from; dropped from what is written


def table_kind(columns: list[str], source: str) -> str:
    """'images' for a table with a path and no text, 'captions' for one with a text."""
    if "text" in columns:
        return "captions"
    if "path" in columns:
        return "images"
    raise ContractError(f"{source}: neither an images table (id, path) nor a captions table (id, text, language); "
                        f"its columns: {', '.join(columns[:12])}")


def read_clean_input(path: str) -> tuple[str, pa.Table]:
    """(kind, conformed table). An image's file as `resolved_path` (a relative path is read from the
    table's folder; links are followed), its `path` kept as written; caption languages in the project's one code system, so that `iw`
    and `he` are one language; a code that names no language refuses the input with its row."""
    raw = read_any(path)
    kind = table_kind(raw.column_names, path)
    table = conform(raw, CLEAN_IMAGES if kind == "images" else CLEAN_CAPTIONS, source=path)
    if kind == "images":
        base = os.path.dirname(os.path.abspath(storage.local(path)))
        paths = [None if p is None else p if os.path.isabs(p) else os.path.join(base, p)
                 for p in table.column("path").to_pylist()]
        return kind, table.append_column(RESOLVED, pa.array(paths, pa.string()))
    return kind, with_language_codes(table, path)


def with_language_codes(table: pa.Table, source: str) -> pa.Table:
    ids, raw = table.column("id").to_pylist(), table.column("language").to_pylist()
    codes = {}
    for i, code in zip(ids, raw):
        if code is not None and code not in codes:
            codes[code] = language_code(code, f"{source}: row {i!r}, column 'language'")
    column = pa.array([None if c is None else codes[c] for c in raw], pa.string())
    return table.set_column(table.schema.get_field_index("language"), "language", column)
