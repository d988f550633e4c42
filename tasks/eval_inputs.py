"""Reading an evaluation's inputs and naming them in results: what every metric runner shares."""
from __future__ import annotations

import os

import pyarrow as pa

from xmdata.schemas.contract import ContractError
from xmdata.schemas.readers import read_any


def read_table(path: str | None, option: str = "INPUT") -> pa.Table:
    """The table at `path` (Parquet, CSV, JSONL, JSON); ContractError when it is missing or unreadable."""
    if not path:
        raise ContractError(f"{option} is required")
    return read_any(path)


def auto_column(table: pa.Table, given: str | None, default: str) -> str | None:
    """The column the user named (it must exist), else `default` when the table has it, else None."""
    if given:
        return given
    return default if default in table.column_names else None


def where(path: str) -> str:
    """An input's name in a result: the file name, so the same data elsewhere gives the same bytes."""
    return os.path.basename(path.rstrip("/"))


def heading(title: str, inputs: list[str], params: dict) -> str:
    shown = ", ".join(f"{k} = {v}" for k, v in params.items() if v not in (None, "", []))
    return f"## {title}\n\nInput: {', '.join(f'`{where(p)}`' for p in inputs)}. {shown}\n\n"
