"""Building rejects tables: every refused row keeps its stage, its reason and its offending value."""
from __future__ import annotations

from itertools import groupby
from typing import Iterable

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.schemas.reasons import registered
from xmdata.schemas.tables import REJECTS_SCHEMA

VALUE_CHARS = 200


def make_rejects(stage: str, reason: str, row_ids: Iterable, values: Iterable | None = None) -> pa.Table:
    """REASON must be registered in schemas/reasons.py (UnregisteredReason otherwise)."""
    registered(reason)
    ids = [None if i is None else str(i) for i in row_ids]
    vals = [None] * len(ids) if values is None else [
        None if v is None else str(v)[:VALUE_CHARS] for v in values]
    return pa.table({"stage": [stage] * len(ids), "reason": [reason] * len(ids),
                     "row_id": ids, "value": vals}, schema=REJECTS_SCHEMA)


def rejects_in_order(stage: str, rows: Iterable[tuple]) -> pa.Table:
    """Rejects of (row_id, reason, value) ROWS, in their order (one make_rejects per run of a reason)."""
    return concat_rejects([make_rejects(stage, reason, *zip(*[(i, v) for i, _, v in run]))
                           for reason, run in groupby(rows, key=lambda row: row[1])])


def no_rejects() -> pa.Table:
    return REJECTS_SCHEMA.empty_table()


def concat_rejects(parts: list[pa.Table]) -> pa.Table:
    return pa.concat_tables([no_rejects(), *parts])


def blank_mask(column: pa.ChunkedArray) -> pa.ChunkedArray:
    """True where a text is missing or only whitespace."""
    return pc.or_kleene(pc.is_null(column), pc.equal(pc.utf8_trim_whitespace(column), ""))


def split_by_mask(table: pa.Table, bad: pa.ChunkedArray | pa.Array, stage: str, reason: str,
                  value_column: str | None = None, id_column: str = "id") -> tuple[pa.Table, pa.Table]:
    """(rows where bad is false, rejects for rows where it is true)."""
    bad = pc.fill_null(bad, False)
    if not pc.any(bad).as_py():  # most masks: no row refused, and no copy of every row made
        return table, make_rejects(stage, reason, [], [] if value_column else None)
    refused = table.filter(bad)
    values = refused.column(value_column).to_pylist() if value_column else None
    return table.filter(pc.invert(bad)), make_rejects(
        stage, reason, refused.column(id_column).to_pylist(), values)
