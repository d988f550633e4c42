"""Read any input a user points at: Parquet, CSV, JSONL/NDJSON, JSON, and any URL polars reads."""
from __future__ import annotations

import io
import json
import os
import re

import polars as pl
import pyarrow as pa

from .column_map import apply_active_map
from .contract import ContractError, TableContract
from .validate import conform

READERS = {
    ".parquet": lambda p: pl.read_parquet(p),
    ".pq": lambda p: pl.read_parquet(p),
    # Every CSV value is read as text; the contract converts it and names what does not convert.
    ".csv": lambda p: pl.read_csv(p, infer_schema=False),
    ".tsv": lambda p: pl.read_csv(p, separator="\t", infer_schema=False),
    ".jsonl": lambda p: pl.read_ndjson(p),
    ".ndjson": lambda p: pl.read_ndjson(p),
    ".json": lambda p: pl.read_json(p),
}


def read_any(path: str) -> pa.Table:
    """The file as an Arrow table with the run's column mapping applied (schemas/column_map.py), or a
    ContractError naming the file and what went wrong. A URL (s3://, gs://, hf://…) is read through
    fsspec with the run's credentials, after a preflight of its store (runtime/storage_check.py)."""
    from xmdata.runtime import storage

    is_remote = storage.is_url(path)
    suffix = input_format(path)
    if is_remote:
        from xmdata.runtime.storage_check import check_location

        check_location(path, "input", must_exist=True)
    elif suffix not in (".parquet", ".pq"):
        _require_utf8_text(storage.local(path))
    try:
        if is_remote:
            source = io.BytesIO(storage.read_bytes(path))  # one GET
        else:
            source = storage.local(path)
        table = READERS[suffix](source).to_arrow()
    except (Exception, pl.exceptions.PanicException) as exc:  # polars raises many kinds (a panic too)
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        problem = not is_remote and _json_problem(path, suffix)
        raise ContractError(problem or f"{path}: cannot read as {suffix[1:]}: {first_line}") from exc
    if suffix in (".csv", ".tsv"):
        _check_header(path, table.column_names, suffix)
    if table.num_rows == 0:  # a header-only CSV, an empty JSONL: nothing to do is not a success
        raise ContractError(f"{path}: no rows (the file holds {'only a header' if table.num_columns else 'nothing'})")
    return apply_active_map(table, path)


def input_format(path: str) -> str:
    """The reader's suffix of PATH, refusing a missing local file, a folder or an unknown format."""
    from xmdata.runtime import storage

    if not storage.is_url(path) and not os.path.exists(storage.local(path)):
        raise ContractError(f"{path}: file not found")
    if not storage.is_url(path) and os.path.isdir(storage.local(path)):
        raise ContractError(f"{path}: is a folder; give a table file ({', '.join(sorted(READERS))})")
    suffix = next((s for s in READERS if path.lower().endswith(s)), None)
    if suffix is None:
        raise ContractError(f"{path}: unknown format; expected one of {', '.join(sorted(READERS))}")
    return suffix


def _check_header(path: str, names: list[str], suffix: str) -> None:
    """Two columns of one name (polars renames the second `<name>_duplicated_0`), or one column whose
    name holds another separator: the table read is not the table the file holds."""
    repeated = [n.rsplit("_duplicated_", 1)[0] for n in names if re.search(r"_duplicated_\d+$", n)]
    if repeated:
        raise ContractError(f"{path}: column {repeated[0]!r} appears more than once in the header")
    other = next((sep for sep in (";", "\t", "|", ",") if len(names) == 1 and sep in names[0]), None)
    if other is not None:
        expected = "tab" if suffix == ".tsv" else "comma"
        raise ContractError(f"{path}: one column named {names[0][:60]!r}: the file looks {other!r}-separated; "
                            f"{suffix} files are read {expected}-separated")


def _require_utf8_text(path: str) -> None:
    """Text formats must be UTF-8: a UTF-16 file (Excel's "Unicode text") makes polars panic."""
    with open(path, "rb") as handle:
        head = handle.read(1 << 16)
    if b"\x00" in head:
        raise ContractError(f"{path}: not UTF-8 text (it holds NUL bytes: UTF-16 or binary); save it as UTF-8")


class _NotJson(ValueError):
    """A number JSON does not have (NaN, Infinity, -Infinity): Python's json module reads and writes
    it, polars refuses it as "InternalError(TapeError) at character 27"."""


def _refuse(constant: str):
    raise _NotJson(constant)


# A JSON string (skipped whole, escapes and all) or one of those numbers outside any string.
_STRING_OR_CONSTANT = re.compile(r'"(?:[^"\\]|\\.)*"|(-?Infinity|NaN)')


def _json_problem(path: str, suffix: str) -> str | None:
    """Where a JSON/JSONL file breaks (polars says only "Syntax at character 0"), the whole message:
    `FILE: cannot read as jsonl: line N …`, or `FILE:LINE: NaN is not JSON`."""
    if suffix not in (".jsonl", ".ndjson", ".json"):
        return None
    cannot = f"{path}: cannot read as {suffix[1:]}"
    try:
        with open(path, encoding="utf-8") as handle:
            if suffix == ".json":
                text = handle.read()
                json.loads(text, parse_constant=_refuse)
                return None
            for number, line in enumerate(handle, 1):
                if line.strip() and not isinstance(json.loads(line, parse_constant=_refuse), dict):
                    return f"{cannot}: line {number} is not a JSON object (one object per line expected)"
    except UnicodeDecodeError as exc:
        return f"{cannot}: not UTF-8 text ({exc.reason} at byte {exc.start})"
    except _NotJson as exc:
        if suffix == ".json":  # the first one outside a string is the one the parser stopped at
            found = next(m for m in _STRING_OR_CONSTANT.finditer(text) if m.group(1))
            number = text.count("\n", 0, found.start()) + 1
        return f"{path}:{number}: {exc} is not JSON"
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno}" if suffix == ".json" else f"line {number}"
        truncated = " (truncated?)" if "Unterminated" in exc.msg or "Expecting" in exc.msg else ""
        return f"{cannot}: {where} is not valid JSON{truncated}: {exc.msg} at column {exc.colno}"
    return None


def read_input(path: str, contract: TableContract) -> pa.Table:
    """Read and conform an input, refusing it whole when it breaks the contract."""
    return conform(read_any(path), contract, source=path)
