"""Row-level checks every input gets: an id that is present, non-empty and unique."""
from __future__ import annotations

import pyarrow as pa

from .rejects import blank_mask, concat_rejects, split_by_mask


def reject_bad_ids(table: pa.Table, stage: str, id_column: str = "id") -> tuple[pa.Table, pa.Table]:
    """Drop rows with an empty id, then every repeat of an id after its first row, with reasons."""
    kept, empty_rejects = split_by_mask(table, blank_mask(table.column(id_column)), stage, "empty_id",
                                        id_column, id_column)
    seen: set[str] = set()
    repeat = []
    for value in kept.column(id_column).to_pylist():
        repeat.append(value in seen)
        seen.add(value)
    kept, dup_rejects = split_by_mask(kept, pa.array(repeat, pa.bool_()), stage, "duplicate_id",
                                      id_column, id_column)
    return kept, concat_rejects([empty_rejects, dup_rejects])
