"""Idle means small: the resident memory of everything `xmdata demo` leaves running, over time.

`xmdata demo` with the service, in a new PREFECT_HOME and XMDATA_CACHE (a service of its own); then
the RSS of the service's whole process tree (the service with its scheduler and nannies, the Prefect
server, the workers), summed with psutil every SAMPLE_S s for MINUTES minutes. Then what idleness
costs the next commands: a one-row language ID sent to the cluster (its retired workers called
back: time to the first shard, whole command) and the same again, warm; the demo again (every model
loaded anew on the workers) and once more, warm. The service is stopped at the end.
Goal: at most GOAL_MB five minutes after the demo, with the default XMDATA_MODEL_IDLE_MINUTES (3; a
value set in the environment is used, e.g. 1 for a quicker look).
"""
from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys
import time

from bench import isolated_home

MINUTES = 5.0
SAMPLE_S = 15.0
GOAL_MB = 600
XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")


def timed(args: list[str], env: dict, first_record: str | None = None) -> dict:
    started = time.time()
    subprocess.run([XMDATA, *args, "-q"], env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.time() - started
    return {"wall_s": wall, "first_shard_s": os.stat(first_record).st_mtime - started if first_record else None}


def demo(root: str, label: str, env: dict) -> dict:
    out = os.path.join(root, f"demo-{label}")
    figures = timed(["demo", "--out", out], env)
    runs = glob.glob(os.path.join(root, f"demo-{label}*", "**", "run.json"), recursive=True)
    stages = [stage for path in runs for stage in json.load(open(path)).values()]
    figures["model_load_s"] = sum(stage.get("model_load_s", 0.0) for stage in stages)  # summed over workers
    return figures


def one_row_on_cluster(root: str, one: str, label: str, env: dict) -> dict:
    out = os.path.join(root, f"lid-{label}")
    return timed(["identify-language", one, "--out", out, "--shards", "1", "--executor", "dask"], env,
                 os.path.join(out, "language_id", "_done", "shard-00000.json"))


def sample(minutes: float, every_s: float) -> list[tuple[float, dict]]:
    from xmdata.service.service import read_state
    from xmdata.service.service_status import memory_mb

    samples, started = [], time.monotonic()
    while True:
        elapsed = time.monotonic() - started
        state = read_state() or {}
        samples.append((elapsed, {**memory_mb(state), "retired": state.get("retired")} if state else {}))
        if elapsed >= minutes * 60:
            return samples
        time.sleep(min(every_s, minutes * 60 - elapsed))


def main() -> dict:
    root, env = isolated_home("xmdata-bench-idle-")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from xmdata.service.service import model_idle_seconds
    from xmdata.service.service_stop import stop_service

    one = os.path.join(root, "one.parquet")
    pq.write_table(pa.table({"id": ["c0"], "text": ["a red bicycle in the street"]}), one)
    figures: dict = {"model_idle_minutes": model_idle_seconds() / 60}
    try:
        figures["demo"] = demo(root, "first", env)
        figures["samples"] = sample(MINUTES, SAMPLE_S)
        figures["lid, workers called back"] = one_row_on_cluster(root, one, "back", env)
        figures["lid, warm"] = one_row_on_cluster(root, one, "warm", env)
        figures["demo, models reloaded"] = demo(root, "reloaded", env)
        figures["demo, warm"] = demo(root, "warm", env)
    finally:
        stop_service()
        print_figures(figures)
        shutil.rmtree(root, ignore_errors=True)
    return figures


def print_figures(f: dict) -> None:
    print(f"idle memory: RSS of the service's whole tree after `xmdata demo`, in MB "
          f"(XMDATA_MODEL_IDLE_MINUTES={f['model_idle_minutes']:g})")
    if "demo" in f:
        print(f"  demo: {f['demo']['wall_s']:.1f} s wall (the service's start included), model loads "
              f"{f['demo']['model_load_s']:.1f} s summed over the workers")
    for elapsed, mb in f.get("samples", []):
        if mb:
            print(f"  {elapsed / 60:4.1f} min after: {mb['total']:6,} all told (service {mb['service']:,}, "
                  f"Prefect server {mb['prefect']:,}, workers {mb['workers']:,}){'; workers retired' if mb['retired'] else ''}")
        else:
            print(f"  {elapsed / 60:4.1f} min after: the service is not running")
    if f.get("samples"):
        last = f["samples"][-1][1].get("total", 0)
        print(f"  after {MINUTES:g} min: {last:,} MB (goal <= {GOAL_MB}: {'met' if last <= GOAL_MB else 'MISSED'})")
    for label in ("lid, workers called back", "lid, warm"):
        if label in f:
            r = f[label]
            print(f"  one-row language ID on the cluster, {label}: first shard done after {r['first_shard_s']:.2f} s, "
                  f"whole command {r['wall_s']:.2f} s")
    for label in ("demo, models reloaded", "demo, warm"):
        if label in f:
            r = f[label]
            print(f"  {label}: {r['wall_s']:.1f} s wall, model loads {r['model_load_s']:.1f} s summed over the workers")
