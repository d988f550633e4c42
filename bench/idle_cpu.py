"""What the resident service burns doing nothing: CPU-s a minute of each of its processes (the service
with its Dask scheduler and nannies, the Prefect server, the workers, the warm command process), idle
for IDLE_S seconds after `xmdata up` and its cluster are up, in one run:

- with Dask's own memory monitor (every 100 ms in each worker and each nanny), set the way a user
  would (DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL; the service keeps a user's own value);
- as shipped (service/service_start.py IDLE_FRIENDLY_DASK: every 1 s).
Each variant ROUNDS times, alternating, the median taken: the machine's load drifts.
"""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time

import psutil

from bench import isolated_home
from bench.cpu_meter import service_processes

IDLE_S = 30.0
SETTLE_S = 5.0
ROUNDS = 3
VARIANTS = (("Dask's memory monitor (0.1 s)", {"DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "100ms"}),
            ("as shipped", {}))
ROLES = (("Prefect server", "prefect server start"), ("warm command process", "command_server"),
         ("service: scheduler, nannies", "service_main"), ("workers", "spawn_main"),
         ("resource tracker", "resource_tracker"))
DASK_ROLES = ("service: scheduler, nannies", "workers")  # what the memory monitor's interval changes


def role(proc: psutil.Process) -> str:
    line = " ".join(proc.cmdline())
    return next((name for name, part in ROLES if part in line), "other")


def idle_cpu(env: dict) -> dict[str, float]:
    """CPU-s a minute per role of a service started with `env`, idle."""
    from xmdata.service.service import cluster_address
    from xmdata.service.service_stop import stop_service

    stop_service()
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "xmdata"), "up"], env=env, check=True,
                   stdout=subprocess.DEVNULL)
    cluster_address()  # its workers up
    time.sleep(SETTLE_S)
    tree, commands = service_processes()
    before = {}
    for proc in [*tree, *([commands] if commands else [])]:
        with contextlib.suppress(psutil.NoSuchProcess):
            before[proc] = sum(proc.cpu_times()[:2])
    time.sleep(IDLE_S)
    figures: dict[str, float] = {}
    for proc, started in before.items():
        try:
            used, name = sum(proc.cpu_times()[:2]) - started, role(proc)
        except psutil.NoSuchProcess:  # a worker that ended meanwhile: counted nowhere, as Dask's own
            continue
        figures[name] = figures.get(name, 0.0) + used * 60 / IDLE_S
    figures["all"] = sum(figures.values())
    return figures


def main() -> dict:
    _, env = isolated_home("xmdata-bench-idle-cpu-")
    from xmdata.service.service_stop import stop_service

    runs: dict[str, list[dict]] = {label: [] for label, _ in VARIANTS}
    try:
        for _ in range(ROUNDS):
            for label, extra in VARIANTS:
                runs[label].append(idle_cpu({**env, **extra}))
    finally:
        stop_service()
    print(f"idle service: CPU-s a minute over {IDLE_S:.0f} s idle, median of {ROUNDS} (each variant's rounds alternate)")
    medians = {}
    for label, rounds in runs.items():
        medians[label] = {key: sorted(r.get(key, 0.0) for r in rounds)[len(rounds) // 2] for key in rounds[0]}
        parts = ", ".join(f"{key} {value:.2f}" for key, value in medians[label].items() if key != "all")
        print(f"  {label:31s} {medians[label]['all']:5.2f} CPU-s a minute ({parts})")
    first, shipped = (medians[label]["all"] for label, _ in VARIANTS)
    dask = [sum(medians[label].get(name, 0.0) for name in DASK_ROLES) for label, _ in VARIANTS]
    print(f"  as shipped: {shipped / first:.2f}x the idle CPU with Dask's memory monitor; "
          f"its Dask processes alone {dask[1] / dask[0]:.2f}x")
    return medians


if __name__ == "__main__":
    main()
