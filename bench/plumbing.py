"""Does each piece of the plumbing earn its lines (issue 55, item 2)? Each measured with and without it,
in one run (the template's rounds alternate; the command server's are bench.light's, five with then
five without). `python -m bench plumbing`; it starts and stops the service of the calling environment.

- command server (service/command_server.py, service/client.py, service/warm_cold.py): a 10-row
  `identify-language` and a finished demo re-checked, through the service's warm command process and in a process of their own
  (bench.light's measure: median wall, CPU-s over every process).
- Prefect database template (runtime/prefect_db.py): a Prefect server's first start in a new home, its
  database copied from the template, and made by Prefect's own migrations (what the server does
  without it); wall to its API answering, CPU-s of the server.
- workers back: a 10-row command sent to the warm service's cluster after its idle workers were
  retired (they come back for it), in a service of its own. The worker forkserver was measured with
  this (its setting on and off, two rounds alternating) and with the first demo (bench.first_demo,
  one run each) before it was removed: it did not earn its lines (architecture.md).
- CA (runtime/owner_only.py, new_dask_credentials): what making one costs; owner-only needs it (every
  cluster xmdata starts speaks mutual TLS), whatever it saves.

The rule the issue sets: keep a piece that saves >= 0.5 s on a warm command or >= 5 s on the first
demo, or that the owner-only promise needs; delete the rest. Lines: the piece's own modules (functions
for the CA), counted from the source.
"""
from __future__ import annotations

import ast
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import psutil

ROUNDS = 3
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def lines(path: str, names: tuple[str, ...] = ()) -> int:
    """A module's lines, or those of its top-level definitions NAMES."""
    source = open(os.path.join(ROOT, path), encoding="utf-8").read()
    if not names:
        return len(source.splitlines())
    return sum(node.end_lineno - node.lineno + 1 for node in ast.parse(source).body
               if getattr(node, "name", None) in names)


PIECES = {
    "command server": lines("service/command_server.py") + lines("service/client.py") + lines("service/warm_cold.py"),
    "Prefect database template": lines("runtime/prefect_db.py"),
    "CA": lines("runtime/owner_only.py", ("new_dask_credentials", "DaskCredentials")),
}


def server_start(with_template: bool) -> tuple[float, float]:
    """(wall s, CPU-s) of a Prefect server's first start in a new home, to its API answering; in a
    fresh process (Prefect reads PREFECT_HOME once)."""
    home = tempfile.mkdtemp(prefix="xmdata-bench-home-")
    os.environ["PREFECT_HOME"] = home
    from xmdata.runtime import prefect_api, prefect_db

    try:
        started = time.perf_counter()
        if with_template:
            proc, _ = prefect_api.start_prefect_server()
        else:  # what the server does in a home without a database: Prefect's own migrations
            assert prefect_db.home_database() is not None
            proc, url = prefect_api.launch_prefect_server()
            prefect_api.wait_until_healthy(proc, url)
        wall = time.perf_counter() - started
        tree = psutil.Process(proc.pid)
        cpu = sum(sum(p.cpu_times()[:2]) for p in [tree, *tree.children(recursive=True)])
        prefect_api.stop_process_group(proc)
        return wall, cpu
    finally:
        shutil.rmtree(home, ignore_errors=True)


def template_figures() -> dict:
    """Each start in a process of its own (Prefect reads PREFECT_HOME once, when first imported)."""
    import json

    code = "import json; from bench.plumbing import server_start; import sys; print(json.dumps(server_start(sys.argv[1] == 'with')))"
    runs: dict[str, list] = {"with": [], "without": []}
    for _ in range(ROUNDS):
        for how in runs:
            done = subprocess.run([sys.executable, "-c", code, how], cwd=ROOT, capture_output=True, text=True, check=True)
            runs[how].append(json.loads(done.stdout.strip().splitlines()[-1]))
    return {how: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v)) for how, v in runs.items()}


def returning_workers(root: str) -> float:
    """Wall seconds of a 10-row `identify-language --executor dask` through the warm service whose
    idle workers were retired: what a command that needs the cluster waits for them to come back."""
    xmdata = os.path.join(os.path.dirname(sys.executable), "xmdata")
    env = {**os.environ, "XMDATA_CACHE": os.path.join(root, "cache"), "PREFECT_HOME": os.path.join(root, "prefect"),
           "XMDATA_MODEL_IDLE_MINUTES": "0.1"}
    for name in ("PREFECT_API_URL", "XMDATA_EXECUTOR", "XMDATA_DASK_ADDRESS"):
        env.pop(name, None)
    from bench.light import ten_rows

    ten = ten_rows(root)
    command = [xmdata, "identify-language", ten, "--executor", "dask", "-q", "--out"]
    try:
        subprocess.run([*command, os.path.join(root, "first")], env=env, check=True, capture_output=True)
        deadline = time.monotonic() + 120
        while "retired (no task" not in subprocess.run([xmdata, "status"], env=env, capture_output=True, text=True).stdout:
            if time.monotonic() > deadline:
                raise SystemExit("bench.plumbing: the service's workers were not retired")
            time.sleep(2)
        started = time.perf_counter()
        subprocess.run([*command, os.path.join(root, "second")], env=env, check=True, capture_output=True)
        return time.perf_counter() - started
    finally:
        subprocess.run([xmdata, "down"], env=env, capture_output=True)


def returning_figures() -> float:
    runs = []
    for _ in range(2):
        root = tempfile.mkdtemp(prefix="xmdata-bench-back-")
        try:
            runs.append(returning_workers(root))
        finally:
            shutil.rmtree(root, ignore_errors=True)
    return statistics.median(runs)


def ca_figures() -> float:
    from xmdata.runtime.owner_only import new_dask_credentials

    new_dask_credentials()  # imports
    started = time.perf_counter()
    for _ in range(20):
        new_dask_credentials()
    return (time.perf_counter() - started) / 20


def command_server_figures() -> dict:
    from bench.light import _measure, warm_cases

    root = tempfile.mkdtemp(prefix="xmdata-bench-plumbing-")
    try:
        client, own, cases = warm_cases(root)
        return {name: {"with": _measure([*client, *args], root), "without": _measure([*own, *args], root)}
                for name, args in cases.items()}
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> None:
    print(f"lines: {', '.join(f'{k} {v}' for k, v in PIECES.items())}", flush=True)
    print(f"CA: {ca_figures() * 1000:.1f} ms to make one (a CA and its certificate); owner-only needs it", flush=True)
    template = template_figures()
    print(f"Prefect database template, a new home's first server start (median of {ROUNDS}, alternating): "
          f"with {template['with'][0]:.1f} s ({template['with'][1]:.1f} CPU-s), without "
          f"{template['without'][0]:.1f} s ({template['without'][1]:.1f} CPU-s): saves "
          f"{template['without'][0] - template['with'][0]:.1f} s", flush=True)
    commands = command_server_figures()
    for name, both in commands.items():
        (w_wall, w_cpu), (o_wall, o_cpu) = both["with"], both["without"]
        print(f"command server, {name}: warm {w_wall:.2f} s ({w_cpu:.2f} CPU-s), own process {o_wall:.2f} s "
              f"({o_cpu:.2f} CPU-s): saves {o_wall - w_wall:.2f} s", flush=True)
    subprocess.run([os.path.join(os.path.dirname(sys.executable), "xmdata"), "down"], capture_output=True)
    back = returning_figures()
    print(f"workers back: a 10-row command on the warm service's retired workers (median of 2): {back:.1f} s",
          flush=True)
    print(f"(machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
