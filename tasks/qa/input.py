"""What the QA translation reads: MMEB-style instances, filtered by task and capped per task.

MMEB's own column names are accepted (qry, pos_text, neg_text, qry_image_path; one file per subset,
so `task` may come as `subset`), and rows without an id get `<task>/<row number in the task>`.
The cap keeps the first rows of each task in input order, as the method did (10,000 per task).
"""
from __future__ import annotations

import polars as pl
import pyarrow as pa

from xmdata.schemas import ContractError
from xmdata.schemas.readers import read_any
from xmdata.schemas.translation import QA_INPUT
from xmdata.schemas.validate import conform

from xmdata.tasks.stage_params import DEFAULT_EXCLUDED_TASKS, DEFAULT_PER_TASK  # declared with the stage's params
ALIASES = {"qry": "query", "pos_text": "positive", "neg_text": "negative", "subset": "task"}


def read_qa_input(source: str | pa.Table) -> pa.Table:
    """The input conformed to the qa_input contract (ContractError naming every violation)."""
    raw = source if isinstance(source, pa.Table) else read_any(source)
    name = "input table" if isinstance(source, pa.Table) else source
    renames = {old: new for old, new in ALIASES.items() if old in raw.column_names and new not in raw.column_names}
    raw = raw.rename_columns([renames.get(c, c) for c in raw.column_names])
    if "image" not in raw.column_names and "qry_image_path" in raw.column_names:
        raw = raw.append_column("image", raw.column("qry_image_path"))  # copied: qry_image_path stays too
    if "id" not in raw.column_names and "task" in raw.column_names:
        frame = pl.from_arrow(raw).with_columns(
            (pl.col("task").cast(pl.Utf8) + "/" + pl.int_range(pl.len()).over("task").cast(pl.Utf8)).alias("id"))
        raw = frame.to_arrow()
    # Columns the translation does not use (MMEB's pos_image_path, neg_image_path, …) are kept: the
    # outputs carry them (passthrough_columns), so a text-to-image instance keeps its images.
    return conform(raw, QA_INPUT, source=name)


def passthrough_columns(table: pa.Table) -> pa.Table | None:
    """id and every input column the QA contract does not name, or None when there are none."""
    extra = [c for c in table.column_names if c not in QA_INPUT.schema.names]
    return table.select(["id", *extra]) if extra else None


def select_instances(table: pa.Table, exclude_tasks: list[str] | tuple[str, ...] = DEFAULT_EXCLUDED_TASKS,
                     per_task: int | None = DEFAULT_PER_TASK) -> tuple[pa.Table, dict[str, dict[str, int]]]:
    """(kept rows in input order, per task: rows, excluded, over_cap, selected). Task names match
    case-insensitively; per_task None keeps every row."""
    if per_task is not None and per_task < 1:
        raise ContractError(f"--per-task must be at least 1, got {per_task}")
    excluded = {t.casefold() for t in exclude_tasks}
    frame = pl.from_arrow(table).with_row_index("_order").with_columns(
        pl.col("task").fill_null("").alias("task"))
    frame = frame.with_columns(
        pl.col("task").str.to_lowercase().is_in(list(excluded)).alias("_excluded"),
        pl.int_range(pl.len()).over("task").alias("_rank"))
    over = pl.col("_rank") >= per_task if per_task is not None else pl.lit(False)
    frame = frame.with_columns((~pl.col("_excluded") & over).alias("_over_cap"))
    stats = frame.group_by("task", maintain_order=True).agg(
        pl.len().alias("rows"), pl.col("_excluded").sum().alias("excluded"),
        pl.col("_over_cap").sum().alias("over_cap"))
    counts = {r["task"]: {"rows": r["rows"], "excluded": r["excluded"], "over_cap": r["over_cap"],
                          "selected": r["rows"] - r["excluded"] - r["over_cap"]}
              for r in stats.sort("task").iter_rows(named=True)}
    kept = frame.filter(~pl.col("_excluded") & ~pl.col("_over_cap")).sort("_order")
    return kept.select(table.column_names).to_arrow().cast(table.schema), counts
