"""Input checks for the evaluation metrics. Metrics take column names as options, so instead of fixed
contracts these check the named columns: present, of the right kind, finite, on a declared scale."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .contract import ContractError, Violation

MAX_ROWS_SHOWN = 5
KINDS = {
    "numeric": lambda t: pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t),
    "text": lambda t: pa.types.is_string(t) or pa.types.is_large_string(t),
    "label": lambda t: not (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
                            or pa.types.is_struct(t)),
    "vector": lambda t: pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t),
}


def row_labels(table: pa.Table, mask: np.ndarray, id_column: str = "id") -> tuple[str, ...]:
    """Up to five offending rows, named by id when the table has one, else by position."""
    rows = np.flatnonzero(mask)[:MAX_ROWS_SHOWN]
    if id_column in table.column_names:
        ids = table.column(id_column).take(pa.array(rows)).to_pylist()
        return tuple(f"{id_column}={v!r}" for v in ids)
    return tuple(f"row {i}" for i in rows)


def require_columns(table: pa.Table, columns: dict[str, str], source: str) -> None:
    """Every named column exists and has its kind (numeric, text, label, vector); else ContractError."""
    violations = []
    for name, kind in columns.items():
        if name not in table.column_names:
            violations.append(Violation(source, name, f"required column is missing (a {kind} column)"))
        elif not KINDS[kind](table.schema.field(name).type):
            violations.append(Violation(source, name, f"has type {table.schema.field(name).type}, expected {kind}"))
    if violations:
        raise ContractError(violations)


def numbers(table: pa.Table, column: str, source: str, id_column: str = "id") -> np.ndarray:
    """The column as float64, refusing nulls and NaN/inf: a missing score is never silently dropped."""
    values = table.column(column).to_numpy(zero_copy_only=False).astype(np.float64)
    bad = ~np.isfinite(values)
    if bad.any():
        raise ContractError([Violation(source, column, f"{int(bad.sum())} value(s) are null, NaN or infinite",
                                      row_labels(table, bad, id_column))])
    return values


def require_in_scale(table: pa.Table, column: str, low: float, high: float, source: str,
                     id_column: str = "id") -> None:
    if low > high:
        raise ContractError(f"--rating-scale {low:g} {high:g}: MIN is above MAX")
    values = numbers(table, column, source, id_column)
    bad = (values < low) | (values > high)
    if bad.any():
        raise ContractError([Violation(source, column, f"{int(bad.sum())} value(s) outside the declared "
                                      f"scale [{low:g}, {high:g}]", row_labels(table, bad, id_column))])


def labels(table: pa.Table, column: str, source: str, id_column: str = "id") -> list:
    """The column as Python values, refusing nulls."""
    bad = table.column(column).is_null().to_numpy(zero_copy_only=False)
    if bad.any():
        raise ContractError([Violation(source, column, f"{int(bad.sum())} value(s) are null",
                                      row_labels(table, bad, id_column))])
    return table.column(column).to_pylist()


def vectors(table: pa.Table, column: str, source: str, id_column: str = "id") -> np.ndarray:
    """A list column as an (n, d) float32 matrix; null, ragged or non-finite rows are refused."""
    array = table.column(column).combine_chunks()
    if array.null_count:
        bad = array.is_null().to_numpy(zero_copy_only=False)
        raise ContractError([Violation(source, column, f"{int(bad.sum())} embedding(s) are null",
                                      row_labels(table, bad, id_column))])
    lengths = pc.list_value_length(array).to_numpy(zero_copy_only=False)
    if len(lengths) and (lengths != lengths[0]).any():
        bad = lengths != lengths[0]
        raise ContractError([Violation(source, column, f"embeddings have different lengths ({lengths[0]} and "
                                      f"{lengths[bad][0]})", row_labels(table, bad, id_column))])
    dim = int(lengths[0]) if len(lengths) else 0
    if len(lengths) and dim == 0:
        raise ContractError([Violation(source, column, "embeddings are empty lists")])
    matrix = pc.list_flatten(array).to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(array), dim)
    bad = ~np.isfinite(matrix).all(axis=1)
    if bad.any():
        raise ContractError([Violation(source, column, f"{int(bad.sum())} embedding(s) hold NaN or infinity",
                                      row_labels(table, bad, id_column))])
    zero = ~matrix.any(axis=1)  # no direction: every cosine with it is 0, so it ties with everything
    if zero.any():
        raise ContractError([Violation(source, column, f"{int(zero.sum())} embedding(s) are all zeros",
                                      row_labels(table, zero, id_column))])
    return matrix


def require_ids(table: pa.Table, id_column: str, source: str) -> None:
    """Rows that are items have an id, and each id once: a repeated item would be counted twice."""
    if id_column not in table.column_names:
        return
    values = table.column(id_column).to_pylist()
    blank = np.array([v is None or not str(v).strip() for v in values], dtype=bool)
    if blank.any():
        raise ContractError([Violation(source, id_column, f"{int(blank.sum())} id(s) are null or empty",
                                      tuple(f"row {i}" for i in np.flatnonzero(blank)[:MAX_ROWS_SHOWN]))])
    require_unique(table, [id_column], source, id_column)


def require_unique(table: pa.Table, columns: list[str], source: str, id_column: str = "id") -> None:
    """No two rows share the same values in `columns` (e.g. one score per item and language)."""
    keys = list(zip(*(table.column(c).to_pylist() for c in columns)))
    seen: set = set()
    bad = np.zeros(len(keys), dtype=bool)
    for i, key in enumerate(keys):
        bad[i] = key in seen
        seen.add(key)
    if bad.any():
        raise ContractError([Violation(source, "+".join(columns), f"{int(bad.sum())} repeated key(s)",
                                      row_labels(table, bad, id_column))])


def require_subset(keys: set, available: set, what: str, source: str, other_source: str) -> None:
    """Every key `source` refers to exists in `other_source` (e.g. references for each captioned image)."""
    missing = keys - available
    if missing:
        raise ContractError([Violation(other_source, what, f"{len(missing)} key(s) used in {source} are missing",
                                      tuple(sorted(map(str, missing))[:MAX_ROWS_SHOWN]))])


def require_matching_keys(left: set, right: set, what: str, left_source: str, right_source: str) -> None:
    """Two tables that must describe the same items do: name the keys each lacks."""
    missing = sorted(map(str, left - right))[:MAX_ROWS_SHOWN]
    extra = sorted(map(str, right - left))[:MAX_ROWS_SHOWN]
    violations = []
    if missing:
        violations.append(Violation(right_source, what, f"{len(left - right)} key(s) of {left_source} are missing",
                                    tuple(missing)))
    if extra:
        violations.append(Violation(left_source, what, f"{len(right - left)} key(s) of {right_source} are missing",
                                    tuple(extra)))
    if violations:
        raise ContractError(violations)
