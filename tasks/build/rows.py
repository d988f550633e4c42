"""Row-level checks every input gets: an id that is present, non-empty and unique."""
from __future__ import annotations

import polars as pl
import pyarrow as pa

from .rejects import blank_mask, concat_rejects, split_by_mask


def reject_bad_ids(table: pa.Table, stage: str, id_column: str = "id") -> tuple[pa.Table, pa.Table]:
    """Drop rows with an empty id, then every repeat of an id after its first row, with reasons."""
    kept, empty_rejects = split_by_mask(table, blank_mask(table.column(id_column)), stage, "empty_id",
                                        id_column, id_column)
    repeat = ~pl.from_arrow(kept.column(id_column)).is_first_distinct()  # keeps the first of each id
    kept, dup_rejects = split_by_mask(kept, repeat.to_arrow(), stage, "duplicate_id", id_column, id_column)
    return kept, concat_rejects([empty_rejects, dup_rejects])
