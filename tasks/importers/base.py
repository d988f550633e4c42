"""What every adapter returns, and the layout checks they share: a file in the wrong layout is refused
whole, naming the format expected and the first offending line, before anything is written."""
from __future__ import annotations

import glob
import json
import os
from dataclasses import dataclass, field

import pyarrow as pa

from xmdata.schemas.contract import ContractError, TableContract

from xmdata.tasks.build.rejects import concat_rejects, make_rejects


@dataclass(frozen=True)
class Published:
    """A layout's own counts as its publisher gives them (`source`: the file, repository commit or
    paper they were read from), keyed as the adapter counts what it read: "instances",
    "instances/<piece>", "pairs/<lang>"… A key the source did not hold is reported as not read."""

    source: str
    counts: dict[str, int]


@dataclass
class Imported:
    """Tables by output name with the contract each must meet (None: columns as they are), rows
    refused, what was read (`layout` says which published layout or release) and counts: `counts`
    under the keys of `published`, the publisher's own, so the report sets one beside the other."""

    tables: dict[str, tuple[pa.Table, TableContract | None]]
    layout: str
    rows_read: int
    rejects: list[pa.Table] = field(default_factory=list)
    notes: dict = field(default_factory=dict)  # filtered rows and other facts for the report
    counts: dict[str, int] = field(default_factory=dict)
    published: Published | None = None
    image_folder: str | None = None  # where image paths are relative to when --images does not say (found in the layout)

    def all_rejects(self) -> pa.Table:
        return concat_rejects(self.rejects)


def layout_error(fmt: str, path: str, expected: str, line_no: int | None = None, line: str | None = None,
                 problem: str = "") -> ContractError:
    where = f" line {line_no}" if line_no is not None else ""
    shown = f": {line.rstrip()[:160]!r}" if line is not None else ""
    detail = f" ({problem})" if problem else ""
    return ContractError(f"{path}{where}: not the {fmt} layout{detail}; expected {expected}{shown}")


def count_check(imported: Imported) -> dict | None:
    """The publisher's counts beside what was read, and every difference said in words (a key the
    source did not hold included: a piece or language missing from a download is a difference too)."""
    published = imported.published
    if published is None:
        return None
    differences = []
    for key, expected in published.counts.items():
        read = imported.counts.get(key)
        if read is None:
            differences.append(f"{key}: the publisher has {expected:,}, none read (not in this source)")
        elif read != expected:
            differences.append(f"{key}: the publisher has {expected:,}, read {read:,}")
    return {"source": published.source, "publisher": dict(published.counts),
            "read": {k: imported.counts.get(k) for k in published.counts}, "differences": differences}


def normalise_languages(table: pa.Table, source: str) -> pa.Table:
    """A table's language columns in the project's code system, each distinct code read once; one that
    is no language code is refused naming SOURCE and the first row (1-based) that holds it."""
    from xmdata.schemas.languages import LANGUAGE_COLUMNS, language_code

    for column in LANGUAGE_COLUMNS:
        if column not in table.column_names:
            continue
        values = table.column(column).to_pylist()
        first = {}
        for number, value in enumerate(values, start=1):
            first.setdefault(value, number)
        codes = {v: None if v is None else language_code(str(v), f"{source} row {n}, column {column!r}")
                 for v, n in first.items()}
        table = table.set_column(table.column_names.index(column), column,
                                 pa.array([codes[v] for v in values], pa.string()))
    return table


def reject(fmt: str, reason: str, row_ids: list, values: list | None = None) -> pa.Table:
    return make_rejects(f"import_{fmt.replace('-', '_')}", reason, row_ids, values)


def drop_missing_images(rows: list[dict], images: str | None, fmt: str, column: str) -> tuple[list[dict], list]:
    """(rows whose image file is under IMAGES, [rejects: image_file_missing] for the others); each
    distinct file is looked up once (many rows may share an image). No IMAGES: every row kept."""
    if not images:
        return rows, []
    found = {path: os.path.isfile(os.path.join(images, path)) for path in {r[column] for r in rows}}
    gone = [r for r in rows if not found[r[column]]]
    refused = [reject(fmt, "image_file_missing", [r["id"] for r in gone], [r[column] for r in gone])] if gone else []
    return [r for r in rows if found[r[column]]], refused


def files_in(source: str, pattern: str, fmt: str, what: str, keep=lambda path: True) -> list[str]:
    """SOURCE itself when it is a file, else its files matching `pattern` (`**` descends) that
    `keep` accepts (at least one)."""
    if not os.path.isdir(source):
        return [source]
    files = [p for p in sorted(glob.glob(os.path.join(source, pattern), recursive=True)) if keep(p)]
    if not files:
        raise ContractError(f"{fmt}: {source}: no {what} in this folder")
    return files


def require_file(path: str, fmt: str, what: str) -> str:
    if not os.path.isfile(path):
        raise ContractError(f"{fmt}: {what} {path}: file not found")
    return path


def text_lines(path: str, fmt: str):
    """(line number, line) of a UTF-8 text file; a missing, unreadable or non-UTF-8 file is a ContractError."""
    try:
        with open(path, encoding="utf-8") as handle:
            yield from enumerate(handle, start=1)
    except UnicodeDecodeError as exc:
        raise ContractError(f"{fmt}: {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    except OSError as exc:
        raise ContractError(f"{fmt}: {path}: {exc.strerror or exc}") from exc


def json_lines(path: str, fmt: str, expected: str, required: tuple[str, ...]) -> list[tuple[int, dict]]:
    """(line number, object) of a JSON Lines file whose every object has the required keys."""
    records = []
    for number, line in text_lines(path, fmt):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as exc:
            raise layout_error(fmt, path, expected, number, line, f"not JSON: {exc.msg}") from exc
        missing = [k for k in required if not isinstance(record, dict) or k not in record]
        if missing:
            raise layout_error(fmt, path, expected, number, line, f"no {', '.join(missing)}")
        records.append((number, record))
    if not records:
        raise layout_error(fmt, path, expected, problem="the file has no records")
    return records


def tab_rows(path: str, fmt: str, expected: str, columns: int) -> list[tuple[int, list[str]]]:
    """(line number, fields) of a headerless tab-separated file with exactly `columns` fields a line."""
    rows = []
    for number, line in text_lines(path, fmt):
        if not line.strip():
            continue
        fields = line.rstrip("\r\n").split("\t")
        if len(fields) != columns:
            raise layout_error(fmt, path, expected, number, line,
                               f"{len(fields)} tab-separated field(s), not {columns}")
        rows.append((number, fields))
    if not rows:
        raise layout_error(fmt, path, expected, problem="the file has no rows")
    return rows


def rows_table(rows: list[dict], schema: pa.Schema | None = None) -> pa.Table:
    """Rows with possibly different keys as one table: every key a column (null where a row lacks it),
    types from `schema` where it names the column, else inferred; all-null columns become strings."""
    keys = list(dict.fromkeys([*(schema.names if schema is not None else []), *(k for r in rows for k in r)]))
    arrays = []
    for key in keys:
        values = [r.get(key) for r in rows]
        if schema is not None and key in schema.names:
            arrays.append(_typed(values, key, schema.field(key).type))
        else:
            array = pa.array(values)
            arrays.append(array.cast(pa.string()) if pa.types.is_null(array.type) else array)
    return pa.Table.from_arrays(arrays, names=keys)


def _typed(values: list, key: str, kind: pa.DataType) -> pa.Array:
    """The values as `kind`, or a ContractError naming the column and the first value that is not."""
    try:
        return pa.array(values, kind)
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        for number, value in enumerate(values, start=1):
            try:
                pa.array([value], kind)
            except (pa.ArrowInvalid, pa.ArrowTypeError):
                raise ContractError(f"column {key!r}: record {number} has {value!r} ({type(value).__name__}), "
                                    f"expected {kind}") from exc
        raise ContractError(f"column {key!r}: not {kind}: {exc}") from exc
