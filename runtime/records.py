"""Completion records: written last, they are what makes a shard count as finished."""
from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa

from . import storage
from .atomic import sha256_file
from .shards import ShardPaths
from .stage import Stage


def make_record(stage: Stage, paths: ShardPaths, input_sha256: str, rows_in: int,
                kept: pa.Table, rejects: pa.Table, written_sha256: tuple[str, str]) -> dict:
    """`written_sha256`: of the data and rejects files, as `write_parquet_atomic` wrote them."""
    # No timestamps or hostnames: records are part of the output and must be reproducible.
    by_reason = Counter(rejects.column("reason").to_pylist()) if rejects.num_rows else Counter()
    return {
        "stage": stage.name,
        "shard": paths.name,
        "rows_in": rows_in,
        "rows_out": kept.num_rows,
        "rows_rejected": dict(sorted(by_reason.items())),
        "input_sha256": input_sha256,
        "output_sha256": written_sha256[0],
        "rejects_sha256": written_sha256[1],
        "params_hash": stage.params_hash,
        "code_version": stage.code_version,
    }


def read_record(paths: ShardPaths) -> dict | None:
    try:
        return json.loads(storage.read_text(paths.record))
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def finished_record(stage: Stage, paths: ShardPaths, input_sha256: str) -> dict | None:
    """The shard's record if it matches this input, params and code and its files are intact. On an
    object store every check is one GET (record, data, rejects), never a HEAD or LIST first."""
    record = read_record(paths)
    if record is None:
        return None
    expected = {"input_sha256": input_sha256, "params_hash": stage.params_hash,
                "code_version": stage.code_version}
    if any(record.get(k) != v for k, v in expected.items()):
        return None
    for path, key in ((paths.data, "output_sha256"), (paths.rejects, "rejects_sha256")):
        try:
            if sha256_file(path) != record[key]:
                return None
        except FileNotFoundError:
            return None
    return record
