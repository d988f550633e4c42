"""Running one stage over one shard, the unit of work, and over all shards of an input."""
from __future__ import annotations

import contextvars
import dataclasses
import functools
import hashlib
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from . import memo, storage
from .atomic import sha256_file, write_json_atomic, write_parquet_atomic
from .records import finished_record, make_record
from .shards import ShardPaths
from .stage import Stage


def process_shard(stage: Stage, input_path: str, root: str, index: int, input_sha: str | None = None,
                  source: bytes | None = None, memo_counts: dict | None = None) -> dict:
    """Read a shard (or its bytes, already fetched), run the stage, write data and rejects, then the
    completion record. `memo_counts` gets the units the memo served and the model computed, per kind
    (outside the record: a build with and without the memo writes the same bytes)."""
    memo_counts = {} if memo_counts is None else memo_counts
    paths = ShardPaths(root, stage.name, index)
    input_sha = input_sha or sha256_file(input_path)
    table = pq.read_table(pa.BufferReader(source)) if source is not None else storage.read_parquet(input_path)
    with memo.shard_scope(stage.memo, stage.code_version, stage.memo_params) as used:
        kept, rejects = stage.fn(table, stage.params)
    memo_counts.update({kind: counts.as_dict() for kind, counts in used.counts.items()})
    if stage.memo_kinds:  # written whether the memo was on or off: a rerun never leaves a stale one
        write_json_atomic(memo.shard_use(used), paths.memo_use)
    return write_shard(stage, paths, input_sha, table.num_rows, kept, rejects)


def run_shard_job(stage: Stage, input_path: str, root: str, index: int,
                  storage_options: dict | None = None, record_checked: bool = False) -> dict:
    """What an executor runs for one shard: its record, and how the time went.

    A shard whose completion record already matches is returned as it is, not recomputed: Dask
    reruns a task whose worker died after finishing it, and that must cost a hash, not the work.
    Model loads (their imports included) are timed apart from the work (`models.registry`).
    `storage_options`: the client's `--storage-option`s, for a worker that shares only the store.
    `record_checked`: run in the process that has just found no record (in-process executor): no
    second look (a GET on a store).
    """
    with storage.using_storage_options(storage_options):
        return _shard_job(stage, input_path, root, index, record_checked)


def _shard_job(stage: Stage, input_path: str, root: str, index: int, record_checked: bool) -> dict:
    from xmdata.models import registry  # light: backends are imported only when a model loads

    started, loads_before = time.perf_counter(), registry.MODELS.load_seconds
    # An object is fetched once, then hashed and parsed: one GET, not two.
    source = storage.read_bytes(input_path) if storage.is_url(input_path) else None
    input_sha = hashlib.sha256(source).hexdigest() if source is not None else sha256_file(input_path)
    done = None if record_checked else finished_record(stage, ShardPaths(root, stage.name, index), input_sha)
    memo_counts: dict = {}
    record = done if done is not None else process_shard(stage, input_path, root, index, input_sha, source,
                                                         memo_counts)
    seconds = time.perf_counter() - started
    load_s = registry.MODELS.load_seconds - loads_before
    return {"record": record, "recomputed": done is None, "seconds": seconds, "load_s": load_s, "memo": memo_counts}


GATHER_ROWS = 100_000  # input rows a gather holds in memory at once: its shards are taken this many at a time


def gather_new_units(stage: Stage, paths: list[str], storage_options: dict | None = None) -> dict:
    """The model work of a rebuild's pending shards, gathered: run the stage over their inputs
    together (GATHER_ROWS at a time), so that the few units the memo lacks share batches instead of
    each filling a batch of its own in its shard (one fixed shape per input length,
    models/token_batches.py). What it computes goes to the memo, and the shards, run next, take it
    from there; their output is the same bytes, as a unit's result does not depend on its
    batch-mates. The stage's output here is dropped. When the units the memo lacks add up to more
    than one shard's worth (`memo.GatherBudget`), it stops before computing them and the shards
    compute them side by side, as without it.

    Returns the keys it stored (`MemoOptions.fresh` for the shards), the memo counts per kind, and
    whether it declined."""
    from xmdata.models import registry

    budget, fresh, counts = memo.GatherBudget(len(paths)), set(), {}
    options = dataclasses.replace(stage.memo, audit=0.0, fresh=frozenset())  # the shards audit their hits
    loads_before, started = registry.MODELS.load_seconds, time.perf_counter()

    def run(tables: list[pa.Table]) -> None:
        with memo.shard_scope(options, stage.code_version, stage.memo_params, budget) as used:
            try:
                stage.fn(pa.concat_tables(tables), stage.params)
            finally:  # what was stored before a decline is this build's work too
                for unit_memo in used.memos:
                    unit_memo.flush()
                    fresh.update(unit_memo.stored_keys)
                for kind, kind_counts in used.counts.items():
                    counts.setdefault(kind, memo.Counts()).add(kind_counts)

    declined, failed = False, None
    with storage.using_storage_options(storage_options):
        group: list[pa.Table] = []
        try:
            for path in paths:
                group.append(storage.read_parquet(path))
                if sum(t.num_rows for t in group) >= GATHER_ROWS:
                    run(group)
                    group = []
            if group:
                run(group)
        except memo.GatherDeclined:
            declined = True
        except Exception as exc:  # noqa: BLE001 - what it stored is kept and said; the shards do the rest
            failed = f"{type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"[:300]
    return {"fresh": sorted(fresh), "declined": declined, "failed": failed, "memo": {k: c.as_dict() for k, c in counts.items() if c.as_dict()},
            "seconds": time.perf_counter() - started, "load_s": registry.MODELS.load_seconds - loads_before}


def write_shard(stage: Stage, paths: ShardPaths, input_sha: str, rows_in: int, kept: pa.Table,
                rejects: pa.Table) -> dict:
    """Data, then rejects, then the completion record: a shard counts as done only once all exist."""
    if storage.is_url(paths.data):  # two uploads at once (a round trip less); the record after both
        # In this thread's context: the upload sees the command's storage options.
        rejects_written = _uploads().submit(contextvars.copy_context().run, write_parquet_atomic, rejects,
                                            paths.rejects)
        written = write_parquet_atomic(kept, paths.data), rejects_written.result()
    else:
        written = write_parquet_atomic(kept, paths.data), write_parquet_atomic(rejects, paths.rejects)
    record = make_record(stage, paths, input_sha, rows_in, kept, rejects, written)
    write_json_atomic(record, paths.record)
    return record


@functools.cache
def _uploads() -> ThreadPoolExecutor:
    """One pool per process for the rejects uploads, not a pool (and its threads) per shard."""
    return ThreadPoolExecutor(4, thread_name_prefix="xmdata-upload")


@dataclass
class StageReport:
    """What a stage did in this run: counted from records, never assumed."""

    stage: str
    records: list[dict]
    shards_run: int
    shards_skipped: int
    data_paths: list[str] = field(default_factory=list)
    timing: dict = field(default_factory=dict)  # where it ran, seconds, model loads apart from work

    @property
    def rows_in(self) -> int:
        return sum(r["rows_in"] for r in self.records)

    @property
    def rows_out(self) -> int:
        return sum(r["rows_out"] for r in self.records)

    @property
    def rejected(self) -> dict[str, int]:
        total: dict[str, int] = {}
        for r in self.records:
            for reason, n in r["rows_rejected"].items():
                total[reason] = total.get(reason, 0) + n
        return dict(sorted(total.items()))

    def run_counts(self) -> dict:
        return {"shards_total": len(self.records), "shards_run": self.shards_run,
                "shards_skipped": self.shards_skipped, **self.timing}
