"""Reading an evaluation's inputs and naming them in results: what every metric runner shares."""
from __future__ import annotations

import os
from contextvars import ContextVar

import pyarrow as pa

from xmdata.schemas.column_map import apply_active_map
from xmdata.schemas.contract import ContractError
from xmdata.schemas.evaluation import require_ids
from xmdata.schemas.readers import read_any

from xmdata.tasks.evaluation.report import Report
from xmdata.tasks.evaluation.scored import read_score_run, scored_rows

# What each input of the running metric left out (refused pairs of a score run); run_metric reports it.
LEFT_OUT: ContextVar[dict | None] = ContextVar("left_out", default=None)


def read_table(path: str | None, option: str = "INPUT") -> pa.Table:
    """The table at `path` (Parquet, CSV, JSONL, JSON, or a `score` run folder); rows the score stage
    refused are left out and counted. ContractError when it is missing or unreadable."""
    if not path:
        raise ContractError(f"{option} is required")
    run = read_score_run(path) if os.path.isdir(path) else None
    if run is None and os.path.isdir(path):
        raise ContractError(f"{path}: a folder, but not a score run (no clip_score/data/shard-*.parquet in it); "
                            f"give a table file or the OUT of `xmdata score`")
    table, reasons = (apply_active_map(run[0], path), run[1]) if run is not None else (read_any(path), None)
    table, left_out = scored_rows(table, path, reasons)
    if left_out and (record := LEFT_OUT.get()) is not None:
        record[where(path)] = left_out
    return table


def read_items(o: dict, key: str = "input", option: str = "INPUT") -> pa.Table:
    """read_table for metrics whose rows are items: null, empty and repeated ids are refused."""
    table = read_table(o[key], option)
    require_ids(table, o["id_column"], o[key])
    return table


def auto_column(table: pa.Table, given: str | None, default: str) -> str | None:
    """The column the user named (it must exist), else `default` when the table has it, else None."""
    if given:
        return given
    return default if default in table.column_names else None


def where(path: str) -> str:
    """An input's name in a result: the file name, so the same data elsewhere gives the same bytes."""
    return os.path.basename(path.rstrip("/"))


def metric_report(metric: str, o: dict, result: dict, markdown: str, rows: list[dict],
                  figures: dict | None = None, **first) -> Report:
    """A metric over one input: its JSON led by the metric's name, the input's and `first` (fields
    shown before the result's own), and its rows as the run's table artifact."""
    return Report(metric, {"metric": metric, "input": where(o["input"]), **first, **result}, markdown,
                  figures or {}, {metric: rows})


def heading(title: str, inputs: list[str], params: dict) -> str:
    shown = ", ".join(f"{k} = {v}" for k, v in params.items() if v not in (None, "", []))
    return f"## {title}\n\nInput: {', '.join(f'`{where(p)}`' for p in inputs)}. {shown}\n\n"
