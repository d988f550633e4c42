"""One stage's step for one id, from the stage's rows and rejects: kept (with the values it added),
rejected (with the reason), or absent; with its shard's record, params and models."""
from __future__ import annotations

import polars as pl

from .folders import Folders
from .lookup import find_rejects, find_rows, shard_record, stage_models, stage_params, strip
from .trace import Step


def stage_step(folders: Folders, stage: str, table: str, row_id: str, added: list[str], column: str = "id",
               ) -> tuple[Step, dict | None] | None:
    """(step, the row as the stage wrote it) or None when this build has no such stage."""
    paths = folders.table_paths(table)
    rejects = find_rejects(folders, stage, row_id)
    if not paths and not rejects:
        return None  # not in this build, or not published: the release alone cannot say
    rows = find_rows(paths, column, row_id)
    row = rows.to_dicts()[0] if rows.height else None
    step = Step(stage, "absent", params=stage_params(folders, stage), model=stage_models(folders, stage))
    reasons = ", ".join(sorted({r["reason"] for r in rejects}))
    if row is not None:
        step.record = shard_record(row["_file"])
        step.values = {c: row[c] for c in added if c in row}
        step.outcome = "kept"
        if row.get("status") not in (None, "ok"):  # kept with a status (img2dataset's way): refused
            step.outcome, step.reason = "rejected", reasons or row.get("error_message") or row["status"]
        elif rejects:  # a repeated id: the first row went on, a later one was refused
            step.reason = f"another row with this id was refused: {reasons}"
    elif rejects and not paths and reasons == "duplicate_id":  # ingest keeps the first row of an id
        step.outcome, step.reason = "kept", f"another row with this id was refused: {reasons}"
    elif rejects:
        step.outcome, step.reason = "rejected", reasons
        step.values = {"rejected_value": rejects[0]["value"]} if rejects[0]["value"] else {}
    return step, (strip(row) if row else None)


def found(steps: list[Step]) -> bool:
    return any(s.outcome != "absent" for s in steps)


def first_row(*rows: dict | None, drop: tuple[str, ...] = ()) -> dict | None:
    for row in rows:
        if row:
            return {k: v for k, v in row.items() if k not in drop}
    return None


def rows_of(frame: pl.DataFrame) -> list[dict]:
    return [strip(r) for r in frame.to_dicts()]
