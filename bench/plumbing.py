"""Does each piece of the plumbing earn its lines (issue 55, item 2)? Each measured with and without it,
in one run, rounds alternating so that the machine's drift falls on both. `python -m bench plumbing`.

- command server (runtime/command_server.py, xmdata/client.py): a 10-row `identify-language` and a
  finished demo re-checked, through the service's warm command process and in a process of their own
  (bench.light's measure: median wall, CPU-s over every process).
- Prefect database template (runtime/prefect_db.py): a Prefect server's first start in a new home, its
  database copied from the template, and made by Prefect's own migrations (what the server does
  without it); wall to its API answering, CPU-s of the server.
- worker forkserver (runtime/worker_start.py): the first `xmdata demo` on fresh caches (after
  setup_caches, as ./run leaves them), XMDATA_WORKER_FORKSERVER on and off (bench.first_demo).
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
    "command server": lines("runtime/command_server.py") + lines("xmdata/client.py"),
    "Prefect database template": lines("runtime/prefect_db.py"),
    "worker forkserver": lines("runtime/worker_start.py", ("method", "prepare", "start_early", "_in_step",
                                                           "forkserver_of", "stop_forkserver", "preload", "LIGHT")),
    "CA": lines("runtime/owner_only.py", ("new_dask_credentials", "DaskCredentials")),
}


def server_start(with_template: bool) -> tuple[float, float]:
    """(wall s, CPU-s) of a Prefect server's first start in a new home, to its API answering."""
    from xmdata.runtime import prefect_api, prefect_db

    home = tempfile.mkdtemp(prefix="xmdata-bench-home-")
    os.environ["PREFECT_HOME"] = home
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
    runs: dict[bool, list] = {True: [], False: []}
    saved = os.environ.get("PREFECT_HOME")
    try:
        for _ in range(ROUNDS):
            for with_template in (True, False):
                runs[with_template].append(server_start(with_template))
    finally:
        if saved is None:
            os.environ.pop("PREFECT_HOME", None)
        else:
            os.environ["PREFECT_HOME"] = saved
    return {("with" if k else "without"): (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
            for k, v in runs.items()}


def ca_figures() -> float:
    from xmdata.runtime.owner_only import new_dask_credentials

    new_dask_credentials()  # imports
    started = time.perf_counter()
    for _ in range(20):
        new_dask_credentials()
    return (time.perf_counter() - started) / 20


def forkserver_figures() -> dict:
    """The first demo with the forkserver on and off, each in a fresh process and fresh caches."""
    out = {}
    for mode in ("on", "off"):
        root = tempfile.mkdtemp(prefix=f"xmdata-bench-fs-{mode}-")
        code = ("import json, sys; from bench.first_demo import first_demo; "
                "print(json.dumps(first_demo(sys.argv[1], warm=True)))")
        env = {**os.environ, "XMDATA_WORKER_FORKSERVER": mode}
        done = subprocess.run([sys.executable, "-c", code, root], env=env, cwd=ROOT, capture_output=True, text=True)
        shutil.rmtree(root, ignore_errors=True)
        if done.returncode != 0:
            raise SystemExit(f"bench.plumbing: the first demo (forkserver {mode}) failed:\n{done.stderr[-2000:]}")
        import json

        out[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    return out


def command_server_figures() -> dict:
    from bench.light import _measure, _wait_for_command_process
    from xmdata.runtime.service import ensure_service

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = tempfile.mkdtemp(prefix="xmdata-bench-plumbing-")
    ten = os.path.join(root, "ten.parquet")
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(10)],
                             "text": [f"This is the English sentence number {i}." for i in range(10)]}), ten)
    ensure_service(quiet=True)
    _wait_for_command_process()
    client, own = [os.path.join(os.path.dirname(sys.executable), "xmdata")], [sys.executable, "-m", "xmdata.cli"]
    demo = os.path.join(root, "demo")
    subprocess.run([*client, "demo", "--out", demo, "-q"], check=True, stdout=subprocess.DEVNULL)
    cases = {"identify-language, 10 rows": ["identify-language", ten, "--out", os.path.join(root, "lid"), "-q"],
             "demo, finished release re-checked": ["demo", "--out", demo, "-q"]}
    return {name: {"with": _measure([*client, *args], root), "without": _measure([*own, *args], root)}
            for name, args in cases.items()}


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
    demo = forkserver_figures()
    on, off = demo["on"], demo["off"]
    print(f"worker forkserver, first demo on fresh caches: on {on['wall_s']:.1f} s ({on['cpu_s']:.1f} CPU-s), "
          f"off {off['wall_s']:.1f} s ({off['cpu_s']:.1f} CPU-s): saves {off['wall_s'] - on['wall_s']:.1f} s; "
          f"same release: {on['release_sha256'] == off['release_sha256']}", flush=True)
    print(f"(machine: {os.cpu_count()} cores, load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
