"""What a small command costs, side by side in one run: through the service's warm command process
(the `xmdata` entry point, service/client.py) and in a process of its own (`python -m xmdata.cli`,
every import paid again, as every command did before). Wall seconds (median of N) and CPU-seconds
summed over every process (the command, the service's scheduler, Prefect server and workers, the
command process and the commands it forked): `--help`, a 10-row `identify-language`, and `xmdata
demo` on a finished release (every stage skipped, the publication kept).
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

from bench.cpu_meter import CpuMeter, _command_process
from xmdata.service.service import read_state
from xmdata.service.service_start import ensure_service

BIN = os.path.dirname(sys.executable)
REPEATS = 5


def _settled() -> None:
    """Until the command process has reaped what it forked (its children's CPU counts then)."""
    state = read_state()
    proc = _command_process(state) if state else None
    deadline = time.monotonic() + 10
    while proc is not None and proc.children() and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(1.1)  # its loop reaps once a second


def _measure(argv: list[str], cwd: str) -> tuple[float, float]:
    walls, cpus = [], []
    for _ in range(REPEATS):
        with CpuMeter() as meter:
            started = time.perf_counter()
            done = subprocess.run(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            wall = time.perf_counter() - started
            _settled()
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(argv)} failed: {done.stderr[-2000:]}")
        walls.append(wall)
        cpus.append(meter.cpu_s)
    return statistics.median(walls), statistics.median(cpus)


def _wait_for_command_process() -> None:
    from xmdata.service.client import command_process

    deadline = time.monotonic() + 300
    while command_process() is None:
        if time.monotonic() > deadline:
            raise SystemExit("the service's command process did not start")
        time.sleep(0.5)


def ten_rows(folder: str) -> str:
    """A 10-row English input for `identify-language`, written in FOLDER."""
    ten = os.path.join(folder, "ten.parquet")
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(10)],
                             "text": [f"This is the English sentence number {i}." for i in range(10)]}), ten)
    return ten


def warm_cases(root: str) -> tuple[list[str], list[str], dict[str, list[str]]]:
    """(the entry point, a process of its own, {case: arguments}) with the service up and its command
    process ready, and a finished demo release in ROOT to re-check."""
    ten = ten_rows(root)
    ensure_service(quiet=True)
    _wait_for_command_process()
    client, own = [os.path.join(BIN, "xmdata")], [sys.executable, "-m", "xmdata.cli"]
    demo = os.path.join(root, "demo")
    subprocess.run([*client, "demo", "--out", demo, "-q"], check=True, stdout=subprocess.DEVNULL)
    return client, own, {"identify-language, 10 rows": ["identify-language", ten, "--out", os.path.join(root, "lid"), "-q"],
                         "demo, finished release re-checked": ["demo", "--out", demo, "-q"]}


def main() -> None:
    root = tempfile.mkdtemp(prefix="xmdata-bench-light-")
    client, own, found = warm_cases(root)
    cases = [("--help", ["--help"]), *found.items()]
    print(f"median of {REPEATS}; CPU-s over every process (command, service, workers, command process)")
    print(f"{'command':36} {'warm process':>20} {'own process':>20} {'wall ratio':>10}")
    for name, args in cases:
        warm_wall, warm_cpu = _measure([*client, *args], root)
        own_wall, own_cpu = _measure([*own, *args], root)
        print(f"{name:36} {warm_wall:6.2f} s {warm_cpu:6.2f} CPU-s {own_wall:6.2f} s {own_cpu:6.2f} CPU-s "
              f"{own_wall / warm_wall:9.1f}x", flush=True)
    print(f"(machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}; "
          f"memory of the command process {(_command_process(read_state()).memory_info().rss >> 20)} MB)")


if __name__ == "__main__":
    main()
