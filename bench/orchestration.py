"""Orchestration overhead: a 100-shard run of a trivial stage through Prefect + Dask, against the
same work (the same process_shard calls on the same shards) in a plain loop, in one process.

Prints wall times and their ratio. The Prefect server start is reported apart: a CLI run pays it
once, and a user with a running server does not pay it at all.
"""
from __future__ import annotations

import os
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc

SHARDS = 100
ROWS_PER_SHARD = 1_000


def shout(table: pa.Table, params: dict):
    """The trivial stage: upper-case a text column."""
    from xmdata.tasks.rejects import no_rejects

    return table.set_column(1, "text", pc.utf8_upper(table.column("text"))), no_rejects()


def write_inputs(root: str) -> list[str]:
    from xmdata.runtime.atomic import write_parquet_atomic

    paths = []
    for i in range(SHARDS):
        ids = [f"s{i}-r{j}" for j in range(ROWS_PER_SHARD)]
        path = os.path.join(root, "input", f"shard-{i:05d}.parquet")
        write_parquet_atomic(pa.table({"id": ids, "text": [f"text {j}" for j in range(ROWS_PER_SHARD)]}), path)
        paths.append(path)
    return paths


def main(workers: int | None = None) -> dict:
    os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    root = tempfile.mkdtemp(prefix="xmdata-bench-")
    os.environ.setdefault("PREFECT_HOME", os.path.join(root, "prefect"))
    from xmdata.runtime.prefect_api import prefect_api
    from xmdata.runtime.process import process_shard
    from xmdata.runtime.stage import Stage

    stage = Stage("shout", "1", shout)
    paths = write_inputs(root)

    started = time.perf_counter()
    for i, path in enumerate(paths):
        process_shard(stage, path, os.path.join(root, "loop"), i)
    loop_s = time.perf_counter() - started

    started = time.perf_counter()
    with prefect_api():
        server_s = time.perf_counter() - started
        from prefect import flow

        from xmdata.runtime.execution import dask_task_runner, run_stage

        @flow(name="bench-orchestration", task_runner=dask_task_runner(n_workers=workers))
        def bench_flow(shard_paths: list[str], out: str):
            return run_stage(stage, shard_paths, out)

        # A 10-shard run first: the difference to the 100-shard run splits fixed from per-shard cost.
        started = time.perf_counter()
        bench_flow(paths[:10], os.path.join(root, "flow10"))
        flow10_s = time.perf_counter() - started
        started = time.perf_counter()
        report = bench_flow(paths, os.path.join(root, "flow"))
        flow_s = time.perf_counter() - started
    assert report.shards_run == SHARDS and report.rows_out == SHARDS * ROWS_PER_SHARD
    per_shard_s = (flow_s - flow10_s) / (SHARDS - 10)
    figures = {"shards": SHARDS, "plain_loop_s": round(loop_s, 2), "prefect_server_start_s": round(server_s, 2),
               "flow_wall_s": round(flow_s, 2), "marginal_per_shard_ms": round(1000 * per_shard_s, 1),
               "fixed_s": round(flow_s - SHARDS * per_shard_s, 1),
               "overhead_ratio": round(flow_s / loop_s, 1)}
    print(f"orchestration: {SHARDS} shards x {ROWS_PER_SHARD} rows, trivial stage")
    print(f"  plain loop            {loop_s:8.2f} s")
    print(f"  Prefect+Dask flow     {flow_s:8.2f} s  (LocalCluster start included; server start {server_s:.1f} s not)")
    print(f"  ratio flow / loop     {flow_s / loop_s:8.1f} x")
    print(f"  split                 {flow_s - SHARDS * per_shard_s:8.1f} s fixed (cluster start, worker imports)"
          f" + {1000 * per_shard_s:.0f} ms per shard (from a 10-shard run: {flow10_s:.1f} s)")
    return figures


if __name__ == "__main__":
    main()
