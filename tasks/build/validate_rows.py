"""`xmdata validate`: beyond types, the row checks the stages make — ids (ingest), coordinates
(geocode), texts (language ID, scoring), language codes — so a table that validates is one the
stages will take whole, and one that does not says which rows would be refused and why."""
from __future__ import annotations

import re
from collections import Counter

import pyarrow as pa

from xmdata.schemas.contract import TableContract

from .rejects import concat_rejects, split_by_mask
from .rows import reject_bad_ids

ROWS_SHOWN = 5
# ISO 639 codes with optional script/region subtags (en, fil, zh-Hant, pt_BR): what every code table uses.
LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}([-_][A-Za-z0-9]{2,8})*$")


def would_reject(table: pa.Table, contract: TableContract) -> pa.Table:
    """Rejects (stage, reason, row_id, value) for every row a stage would refuse, in stage order."""
    if contract.id_column not in table.column_names:
        return concat_rejects([])
    kept, parts = table, []
    if contract.id_column == "id":
        kept, refused = reject_bad_ids(kept, stage="ingest")
        parts.append(refused)
    if {"latitude", "longitude"} <= set(kept.column_names):
        from xmdata.tasks.selection.geocode import split_coordinates

        kept, refused = split_coordinates(kept)
        parts.append(refused)
    if "text" in kept.column_names and contract.name in ("captions", "language_id"):
        from xmdata.tasks.translation.language_id import split_unlabelable

        kept, refused, _ = split_unlabelable(kept, "text")
        parts.append(refused)
    if "language" in kept.column_names and pa.types.is_string(kept.schema.field("language").type):
        values = kept.column("language").to_pylist()
        bad = pa.array([v is not None and not LANGUAGE_CODE.match(v) for v in values], pa.bool_())
        kept, refused = split_by_mask(kept, bad, "language", "not_a_language_code", "language",
                                      contract.id_column)
        parts.append(refused)
    if contract.name == "score_input" and "text" in kept.column_names:  # the score stage's own check
        from xmdata.tasks.scoring.pairs import unscorable

        reasons = [error and error[0] for error in unscorable(kept)]
        for reason in ("empty_text", "no_image_reference"):
            mask = pa.array([r == reason for r in reasons], pa.bool_())
            parts.append(split_by_mask(kept, mask, "clip_score", reason, "text" if reason == "empty_text" else None,
                                       contract.id_column)[1])
    return concat_rejects(parts)


def describe_rejects(rejects: pa.Table) -> list[str]:
    """One line per (stage, reason): how many rows, and the first ones."""
    rows = rejects.to_pylist()
    counts = Counter((r["stage"], r["reason"]) for r in rows)
    lines = []
    for (stage, reason), n in sorted(counts.items()):
        first = [repr(r["row_id"]) for r in rows if (r["stage"], r["reason"]) == (stage, reason)][:ROWS_SHOWN]
        lines.append(f"{stage}: {reason}: {n} row(s) (first: {', '.join(first)})")
    return lines
