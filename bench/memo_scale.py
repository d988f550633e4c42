"""What the memo of model work costs at scale: bytes, files, and a shard's lookup time, for a memo of
N entries in one context (one kind of unit, one model: how MBR utilities of one build would sit).

`python -m bench.memo_scale [--entries N] [--lookup K] [--folder DIR] [--keep]` (default 1,000,000
entries, lookups of 50,000 keys: XMDATA_SHARD_ROWS' default, one unit a row; `./run bench memo_scale`)

The memo is written by the real store code, as a build writes it: shards of K units, each in its own
`shard_scope`, storing a model batch at a time through `UnitMemo.store` (so files of FLUSH_ENTRIES
entries, a shard's last one partial). A unit is an MBR utility — (hypothesis, pseudo-reference,
target) -> a float — the unit that makes 2 billion at the issue's scale. Then, each timed in this
process (wall and CPU seconds):

- cold: a new `MemoOptions` (as a new process has) looks up one shard's keys:
  it lists the context's folder and reads the key column of every entry file (the index), then the
  files that hold the wanted keys; the index's memory is the process's RSS growth;
- warm: the same store, another shard's keys (a later shard in the same process: listing, index);
- a worker's first and next task: the options pickled to this process twice, as a Dask worker's tasks
  receive them: the first builds the worker's index (as cold), the next uses it (as warm);
- scattered: K keys spread over the whole memo (a shard whose entries every file holds a few of);
- misses: K keys the memo lacks (a shard of new units);
- `memo stats` and `memo prune --all --dry-run` over the whole memo.
"""
from __future__ import annotations

import argparse
import hashlib
import os
import shutil
import sys
import tempfile
import time

import psutil

KIND, STAGE = "mbr_utility", "xmdata-bench/memo_scale-1"
CONTEXT = {"models": [{"files": 12, "sha256": "0" * 64}], "packages": {"unbabel-comet": "2.2.6"}}
PARAMS = {"metric": "comet", "candidates": 16}


def unit(i: int) -> list:
    """The i-th MBR pair: a hypothesis, the pseudo-reference it is scored against, the target."""
    instance, pair = divmod(i, 256)
    return [f"hypothesis {pair // 16} of instance {instance}", f"reference {pair % 16} of instance {instance}", "fr"]


def utility(i: int) -> float:
    return int(hashlib.sha256(str(i).encode()).hexdigest()[:13], 16) / 16 ** 13  # ~17 significant digits


def timed(fn):
    process = psutil.Process()
    wall, cpu = time.perf_counter(), process.cpu_times()
    result = fn()
    after = process.cpu_times()
    return result, time.perf_counter() - wall, after.user + after.system - cpu.user - cpu.system


def build(memo, location: str, entries: int, shard: int) -> None:
    options = memo.MemoOptions(location)
    for start in range(0, entries, shard):
        with memo.shard_scope(options, STAGE, PARAMS):
            unit_memo = memo.unit_memo(KIND, CONTEXT)
            for batch in range(start, min(entries, start + shard), memo.FLUSH_ENTRIES):
                positions = range(batch, min(entries, start + shard, batch + memo.FLUSH_ENTRIES))
                unit_memo.store([unit(i) for i in positions], [utility(i) for i in positions])


def lookup(memo, options, positions) -> tuple[int, int]:
    """(served, bad) of one shard's lookup of `positions`' units, in a scope of its own."""
    with memo.shard_scope(options, STAGE, PARAMS) as scope:
        found = memo.unit_memo(KIND, CONTEXT).lookup([unit(i) for i in positions])
    return sum(v is not memo.MISSING for v in found), scope.counts[KIND].bad


def on_disk(location: str) -> tuple[int, int, int]:
    """(entry files, bytes, bytes on disk: allocated blocks) under the memo, every file counted in the bytes."""
    files = size = blocks = 0
    for folder, _, names in os.walk(location):
        for name in names:
            stat = os.stat(os.path.join(folder, name))
            files += name.endswith(".parquet") and not name.startswith(".")
            size, blocks = size + stat.st_size, blocks + stat.st_blocks * 512
    return files, size, blocks


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.memo_scale")
    parser.add_argument("--entries", type=int, default=1_000_000)
    parser.add_argument("--lookup", type=int, default=50_000, help="keys a shard looks up (and a build shard's units)")
    parser.add_argument("--folder", default=None, help="where to build the memo (default: a temp folder, removed)")
    parser.add_argument("--keep", action="store_true", help="leave the memo there (a second run reuses it)")
    args = parser.parse_args(sys.argv[2:] if sys.argv[1:2] == ["memo_scale"] else sys.argv[1:])
    from xmdata.runtime import memo

    n, k = args.entries, min(args.lookup, args.entries)
    root = args.folder or tempfile.mkdtemp(prefix="xmdata-bench-memo-scale-")
    location = os.path.join(root, f"memo-{n}")
    if not os.path.isdir(location):
        _, wall, cpu = timed(lambda: build(memo, location, n, k))
        print(f"built {n:,} entries in shards of {k:,}: {wall:.0f} s wall, {cpu:.0f} CPU-s "
              f"({cpu / n * 1e6:.1f} CPU-µs an entry, hashing and writing only: no model)")
    else:  # kept from an earlier run, maybe stopped before the end: what it holds, in whole shards
        held = memo.stats(location)["kinds"][KIND]["entries"]
        if held < n:
            print(f"{location} holds {held:,} of {n:,} entries (its build was stopped): measured at {held:,}")
        n = min(n, held)
    entry_files, size, blocks = on_disk(location)
    print(f"{n:,} entries: {entry_files:,} entry files ({n / entry_files:,.0f} entries a file), {size / 1e6:,.1f} MB "
          f"({size / n:.1f} B an entry), {blocks / 1e6:,.1f} MB on disk ({blocks / n:.1f} B an entry)")
    from xmdata.runtime import storage

    first = next(os.path.join(d, f) for d, _, fs in os.walk(location) for f in fs if f.endswith(".parquet"))
    storage.read_parquet(first)  # what reading an entry file imports, before the index is measured
    process = psutil.Process()
    rss = process.memory_info().rss
    options = memo.MemoOptions(location)
    last = (n // k - 1) * k  # the last whole shard's first unit
    import pickle

    first_task, next_task = (pickle.loads(pickle.dumps(options)) for _ in range(2))  # as a worker's tasks get it
    runs = {"cold (new store: listing, every file's keys, then the wanted files)": (options, range(0, k)),
            "warm (the same store, another shard)": (options, range(last, last + k)),
            "a worker's first task (the store sent to it: the worker's index, empty)": (first_task, range(0, k)),
            "a worker's next task (sent again: the index the first task read)": (next_task, range(last, last + k)),
            "scattered (the same store, keys spread over every file)": (options, range(0, last + k, max(1, (last + k) // k))[:k]),
            "misses (the same store, units the memo lacks)": (options, range(10 ** 12, 10 ** 12 + k))}
    print(f"a shard's lookup of {k:,} keys:")
    for name, (opts, positions) in runs.items():
        (served, bad), wall, cpu = timed(lambda: lookup(memo, opts, positions))
        grown = (process.memory_info().rss - rss) / 1e6
        print(f"  {name:<70} {wall:7.2f} s wall {cpu:7.2f} CPU-s  {served:,} served, {bad} bad;"
              f" RSS +{grown:,.0f} MB since the first lookup ({grown * 1e6 / n:.0f} B an entry)")
    stats, wall, cpu = timed(lambda: memo.stats(location))
    print(f"memo stats: {wall:.2f} s wall, {cpu:.2f} CPU-s ({stats['kinds'][KIND]['entries']:,} entries)")
    pruned, wall, cpu = timed(lambda: memo.prune(location, everything=True, dry_run=True))
    print(f"memo prune --all --dry-run: {wall:.2f} s wall, {cpu:.2f} CPU-s ({pruned['removed_files']:,} files)")
    if not args.keep:
        shutil.rmtree(root if args.folder is None else location)


if __name__ == "__main__":
    main()
