"""The trivial-stage part of the orchestration bench: a plain loop of `process_shard`, then flows
of 1 to 10,000 shards on the service's warm cluster, each flow called from this process the way
the CLI calls one (Prefect tracks the stage, Dask runs the shards)."""
from __future__ import annotations

import os
import shutil
import sys

from prefect import flow

from bench.cpu_meter import CpuMeter
from bench.orchestration import shout, trivial_shards
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import process_shard
from xmdata.service.run_setup import run_environment
from xmdata.runtime.session import current_session
from xmdata.runtime.stage import Stage

FLOW_SHARDS = (1, 8, 64, 100, 1000, 10_000)
LOOP_SHARDS = 1000


STAGE = Stage("shout", "1", shout)


@flow(name="bench-orchestration")
def trivial_flow(input_dir: str, shards: int, out: str) -> dict:
    """The first `shards` shards of `input_dir` (a list of 10,000 paths is over Prefect's size limit
    for flow parameters: flows take folders, not shard lists)."""
    paths = [os.path.join(input_dir, f"shard-{i:05d}.parquet") for i in range(shards)]
    report = run_stage(STAGE, paths, out)
    return {"rows_out": report.rows_out, "shards_run": report.shards_run}


def trivial_figures(root: str, figures: dict) -> dict:
    stage = STAGE
    paths = trivial_shards(root, max(FLOW_SHARDS))
    with CpuMeter() as loop:
        for i, path in enumerate(paths[:LOOP_SHARDS]):
            process_shard(stage, path, os.path.join(root, "loop"), i)
    figures["trivial loop"] = {"shards": LOOP_SHARDS, "cpu_s": loop.cpu_s, "wall_s": loop.wall_s}
    with run_environment(executor="dask", quiet=True):
        # `bench` is no installed package: the service's scheduler and workers (which unpickle the
        # stage function by reference) import it from this checkout.
        checkout = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        client = current_session().client()
        client.run(lambda: sys.path.insert(0, checkout))
        client.run_on_scheduler(lambda: sys.path.insert(0, checkout))
        for n in FLOW_SHARDS:
            out = os.path.join(root, f"flow-{n}")
            with CpuMeter() as meter:
                result = trivial_flow(os.path.dirname(paths[0]), n, out)
            assert result["shards_run"] == n and result["rows_out"] == n * 100, result
            figures[f"trivial flow {n}"] = {"shards": n, "cpu_s": meter.cpu_s, "wall_s": meter.wall_s,
                                            "loop_wall_per_shard": loop.wall_s / LOOP_SHARDS}
            shutil.rmtree(out)
    return figures
