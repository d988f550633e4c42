"""Read any input a user points at: Parquet, CSV, JSONL/NDJSON, JSON, and any URL polars reads."""
from __future__ import annotations

import io
import os

import polars as pl
import pyarrow as pa

from .column_map import apply_active_map
from .contract import ContractError, TableContract
from .validate import conform

READERS = {
    ".parquet": lambda p: pl.read_parquet(p),
    ".pq": lambda p: pl.read_parquet(p),
    # Every CSV value is read as text; the contract converts it and names what does not convert.
    ".csv": lambda p: pl.read_csv(p, infer_schema=False),
    ".tsv": lambda p: pl.read_csv(p, separator="\t", infer_schema=False),
    ".jsonl": lambda p: pl.read_ndjson(p),
    ".ndjson": lambda p: pl.read_ndjson(p),
    ".json": lambda p: pl.read_json(p),
}


def read_any(path: str) -> pa.Table:
    """The file as an Arrow table with the run's column mapping applied (schemas/column_map.py), or a
    ContractError naming the file and what went wrong. A URL (s3://, gs://, hf://…) is read through
    fsspec with the run's credentials, after a preflight of its store (runtime/storage_check.py)."""
    from xmdata.runtime import storage

    is_remote = storage.is_url(path)
    if not is_remote and not os.path.exists(storage.local(path)):
        raise ContractError(f"{path}: file not found")
    suffix = next((s for s in READERS if path.lower().endswith(s)), None)
    if suffix is None:
        raise ContractError(f"{path}: unknown format; expected one of {', '.join(sorted(READERS))}")
    if is_remote:
        from xmdata.runtime.storage_check import check_location

        check_location(path, "input", must_exist=True)
    try:
        if is_remote:
            with storage.open_file(path, "rb") as f:
                source = io.BytesIO(f.read())
        else:
            source = storage.local(path)
        table = READERS[suffix](source).to_arrow()
    except Exception as exc:  # polars raises many kinds; the user needs the file and the cause
        first_line = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ContractError(f"{path}: cannot read as {suffix[1:]}: {first_line}") from exc
    return apply_active_map(table, path)


def read_input(path: str, contract: TableContract) -> pa.Table:
    """Read and conform an input, refusing it whole when it breaks the contract."""
    return conform(read_any(path), contract, source=path)
