"""Row-level checks every input gets: an id that is present, non-empty and unique."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from .rejects import concat_rejects, split_by_mask


def reject_bad_ids(table: pa.Table, stage: str, id_column: str = "id") -> tuple[pa.Table, pa.Table]:
    """Drop rows with an empty id, then every repeat of an id after its first row, with reasons."""
    ids = table.column(id_column)
    empty = pc.or_kleene(pc.is_null(ids), pc.equal(pc.utf8_trim_whitespace(ids), ""))
    kept, empty_rejects = split_by_mask(table, empty, stage, "empty_id", id_column)
    seen: set[str] = set()
    repeat = []
    for value in kept.column(id_column).to_pylist():
        repeat.append(value in seen)
        seen.add(value)
    kept, dup_rejects = split_by_mask(kept, pa.array(repeat, pa.bool_()), stage, "duplicate_id",
                                      id_column)
    return kept, concat_rejects([empty_rejects, dup_rejects])
