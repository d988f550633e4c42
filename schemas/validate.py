"""Check a table against its contract, report every violation, and return it in contract types."""
from __future__ import annotations

import polars as pl
import pyarrow as pa

from .contract import ContractError, TableContract, Violation

MAX_ROWS_SHOWN = 5


def _row_labels(df: pl.DataFrame, contract: TableContract, mask: pl.Series) -> tuple[str, ...]:
    rows = df.with_row_index("_row").filter(mask).head(MAX_ROWS_SHOWN)
    if contract.id_column in df.columns:
        return tuple(f"{contract.id_column}={v!r}" for v in rows[contract.id_column].to_list())
    return tuple(f"row {i}" for i in rows["_row"].to_list())


def find_violations(table: pa.Table, contract: TableContract, source: str) -> list[Violation]:
    """Every missing required column and every value that does not convert to the contract type."""
    violations = [Violation(source, name, "required column is missing")
                  for name in sorted(contract.required - set(table.column_names))]
    df = pl.from_arrow(table)
    for field in contract.schema:
        if field.name not in table.column_names:
            continue
        target = pl.from_arrow(pa.nulls(0, type=field.type)).dtype
        column = df[field.name]
        if field.name in contract.text_columns and column.dtype not in (pl.String, pl.Null):
            violations.append(Violation(source, field.name, f"has type {column.dtype}, expected text (string)"))
            continue
        if column.dtype.is_nested() and not pa.types.is_nested(field.type):  # polars casts a struct to text
            violations.append(Violation(source, field.name, f"has type {column.dtype}, expected {field.type}"))
            continue
        try:
            converted = column.cast(target, strict=False)
        except pl.exceptions.PolarsError:
            violations.append(Violation(source, field.name, f"has type {column.dtype}, expected {field.type}"))
            continue
        bad = column.is_not_null() & converted.is_null()
        if bad.any():
            violations.append(Violation(
                source, field.name, f"{int(bad.sum())} value(s) are not {field.type}",
                _row_labels(df, contract, bad)))
    return violations


def merge_violations(violations: list[Violation]) -> list[Violation]:
    """One input's violations found batch by batch, as one look at the whole input says them: a
    missing column once, the counts of bad values summed, the first offending rows first."""
    merged: dict[tuple[str, str], tuple[int | None, Violation]] = {}
    for v in violations:
        count, _, rest = v.problem.partition(" value(s) ")
        counted = count.isdigit() and bool(rest)
        key = (v.column, rest if counted else v.problem)
        before = merged.get(key)
        if before is None:
            merged[key] = (int(count) if counted else None, v)
            continue
        total = before[0] + int(count) if counted else None
        rows = (before[1].row_ids + v.row_ids)[:MAX_ROWS_SHOWN]
        problem = f"{total} value(s) {rest}" if counted else before[1].problem
        merged[key] = (total, Violation(before[1].source, v.column, problem, rows))
    return [v for _, v in merged.values()]


def conform(table: pa.Table, contract: TableContract, source: str) -> pa.Table:
    """The table with contract columns first, in contract types; extra columns kept after them.

    Raises ContractError listing every violation, so a broken input stops before any output exists.
    """
    violations = find_violations(table, contract, source)
    if violations:
        raise ContractError(violations)
    schema = pa.schema(list(contract.schema))
    if table.schema.names == schema.names and table.schema.types == schema.types:
        return table.cast(schema)  # already in contract columns and types: no copy of the rows
    df = pl.from_arrow(table)
    columns = []
    for field in contract.schema:
        target = pl.from_arrow(pa.nulls(0, type=field.type)).dtype
        if field.name in df.columns:
            columns.append(df[field.name].cast(target, strict=False).alias(field.name))
        else:
            columns.append(pl.Series(field.name, [None] * df.height, dtype=target))
    extras = [df[c] for c in df.columns if c not in contract.schema.names]
    out = pl.DataFrame(columns + extras).to_arrow()
    # polars writes large_string; the contract says string: cast back so schemas compare equal.
    return out.cast(pa.schema(list(contract.schema) + [out.schema.field(c.name) for c in extras]))
