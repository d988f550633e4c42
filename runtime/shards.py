"""Shards: stable assignment of rows to shards, and where each shard's files live."""
from __future__ import annotations

import hashlib
import math
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import storage


def key_digest(key: bytes) -> bytes:
    """The 8 bytes a key's shard is taken from (big-endian, modulo the shard count)."""
    return hashlib.blake2b(key, digest_size=8).digest()


def shard_of(key: str, n_shards: int) -> int:
    """A row's shard from its key alone: stable across runs, machines and input order."""
    return int.from_bytes(key_digest(key.encode("utf-8")), "big") % n_shards


def shard_count(rows: int, min_shards: int, shard_rows: int) -> int:
    """The shard plan: at least `min_shards`, more when the input has more than `shard_rows` rows a
    shard, so that what one worker holds at once does not grow with the input."""
    return max(min_shards, math.ceil(rows / shard_rows))


def shard_assignment(ids: pa.Array | pa.ChunkedArray, n_shards: int) -> np.ndarray:
    """`shard_of` every id of a batch (a null id goes where the text "None" goes: it is refused there).
    String ids: their UTF-8 bytes straight from Arrow and the digests' modulo in numpy, the same shards
    as `shard_of` at ~60% of its CPU (one blake2b a row is the rest)."""
    if n_shards == 1:
        return np.zeros(len(ids), dtype=np.int64)
    if not (pa.types.is_string(ids.type) or pa.types.is_large_string(ids.type)):
        return np.fromiter((shard_of(str(k), n_shards) for k in ids.to_pylist()), dtype=np.int64, count=len(ids))
    if ids.null_count:
        ids = pc.fill_null(ids, "None")
    keys = pc.cast(ids, pa.large_binary() if pa.types.is_large_string(ids.type) else pa.binary()).to_pylist()
    digests = b"".join([key_digest(key) for key in keys])
    return (np.frombuffer(digests, dtype=">u8") % n_shards).astype(np.int64)


def split_into_shards(table: pa.Table, key: str, n_shards: int) -> list[pa.Table]:
    """n_shards tables; rows keep their input order inside a shard. Some may be empty."""
    if n_shards == 1:
        return [table]
    assignment = pa.array(shard_assignment(table.column(key), n_shards))
    return [table.filter(pc.equal(assignment, i)) for i in range(n_shards)]


def shard_index(path: str) -> int:
    """shard-00042.parquet -> 42: a stage's shard k always reads shard k of the stage before."""
    return int(os.path.basename(path).split(".")[0].rsplit("-", 1)[1])


@dataclass(frozen=True)
class ShardPaths:
    """Files of one shard of one stage: data, rejects, and the completion record written last."""

    root: str
    stage: str
    index: int

    @property
    def name(self) -> str:
        return f"shard-{self.index:05d}"

    @property
    def data(self) -> str:
        return storage.join(self.root, self.stage, "data", f"{self.name}.parquet")

    @property
    def rejects(self) -> str:
        return storage.join(self.root, self.stage, "rejects", f"{self.name}.parquet")

    @property
    def record(self) -> str:
        return storage.join(self.root, self.stage, "_done", f"{self.name}.json")

    @property
    def memo_use(self) -> str:
        """What the shard took from the memo of model work (runtime/memo.py): beside, not in, its record."""
        return storage.join(self.root, self.stage, "_memo", f"{self.name}.json")


def remove_shards_beyond(root: str, stage: str, n_shards: int) -> set[int]:
    """Delete a stage's shard files numbered n_shards and up: left by an earlier run with more shards,
    they would otherwise sit in the release as stale rows. Returns the shards below n_shards that
    have a completion record: callers read only those (on a store, a LIST per folder instead of a
    GET per shard)."""
    recorded = set()
    for kind in ("data", "rejects", "_done", "_memo"):
        folder = storage.join(root, stage, kind)
        for name in storage.listdir(folder):
            if not name.startswith("shard-"):
                continue
            if shard_index(name) >= n_shards:
                storage.remove(storage.join(folder, name))
            elif kind == "_done" and name.endswith(".json"):
                recorded.add(shard_index(name))
    return recorded
