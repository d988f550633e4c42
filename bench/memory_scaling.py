"""Memory against the input's size: peak RSS of every process a command involves, by kind.

`python -m bench.memory_scaling [identify-language translate score release] [--quick]`

Builds the inputs in a temporary folder (captions made up from a few sentences per language, and the
demo's own rows repeated with new ids), runs each command as a user would (`xmdata ...` in a
subprocess) and follows every process it involves: the CLI, what it starts (with XMDATA_SERVICE=off:
its Prefect server and Dask workers), and the xmdata service's tree when a service is up (its
scheduler, Prefect server and workers; their peaks are reset before each command through
/proc/PID/clear_refs). A process's peak is the kernel's high-water mark (VmHWM), read every 0.2 s
while it lives; the CLI's is its rusage from wait4 where that is its own (above every child's). CPU-s per kind: user+system as last seen
(a process that ends between two looks loses at most 0.2 s of CPU).

Figures are ratios within one run: the peak at 10x the rows over the peak at 1x, per process kind.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import psutil
import pyarrow as pa
import pyarrow.parquet as pq

from bench.process_cpu import kind_of

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SAMPLE = os.path.join(ROOT, "data", "sample")
XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")
SENTENCES = {"en": "A red bicycle leans against a wall on a quiet street number {}.",
             "fr": "Un vélo rouge est appuyé contre un mur dans une rue calme numéro {}.",
             "de": "Ein rotes Fahrrad lehnt an einer Wand in einer ruhigen Straße Nummer {}.",
             "es": "Una bicicleta roja está apoyada contra una pared en una calle tranquila número {}.",
             "it": "Una bicicletta rossa è appoggiata a un muro in una strada tranquilla numero {}."}


def kind(proc: psutil.Process, root: int, service: dict) -> str:
    if proc.pid == root:
        return "CLI"
    try:
        cmdline = " ".join(proc.cmdline())
    except psutil.Error:
        return "?"
    if proc.pid == service.get("prefect_pid") or "prefect server" in cmdline or "uvicorn" in cmdline:
        return "prefect server"
    if proc.pid == service.get("pid") or "service_main" in cmdline:
        return "service (scheduler)"
    if re.search(r"spawn_main|forkserver|dask worker|distributed\.cli|nanny", cmdline):
        return "worker"
    return kind_of(cmdline)


def _hwm_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def _service(env: dict) -> tuple[dict, list[psutil.Process]]:
    """The service's state and its processes (none when it is down, or off for the command)."""
    from xmdata.runtime import settings
    from xmdata.service.service import read_state

    off = env.get(settings.SERVICE.name, "").strip().lower() in ("0", "false", "off")
    state = {} if off else read_state() or {}
    procs = []
    for pid in (state.get("pid"), state.get("prefect_pid")):
        try:
            root = psutil.Process(pid) if pid else None
        except psutil.Error:
            continue
        if root is not None:
            procs += [root, *root.children(recursive=True)]
    return state, procs


def measure(command: list[str], env: dict) -> dict:
    """{wall_s, cpu_s: {kind: s}, peak_mb: {kind: MB, the largest process of that kind}, processes}.
    The memo of model work is off unless `env` or the command names one: a command measured twice
    must compute twice (bench/incremental.py measures the memo)."""
    env = {"XMDATA_MEMO": "off", **env}
    state, service_procs = _service(env)
    for proc in service_procs:  # each command's own peak, not the service's lifetime's
        try:
            with open(f"/proc/{proc.pid}/clear_refs", "w") as handle:
                handle.write("5")
        except OSError:
            pass
    cpu0 = {}
    for proc in service_procs:
        try:
            times = proc.cpu_times()
            cpu0[proc.pid] = times.user + times.system
        except psutil.Error:
            pass
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    seen: dict[int, dict] = {}
    done = threading.Event()

    def look():
        try:
            procs = [psutil.Process(child.pid), *psutil.Process(child.pid).children(recursive=True)]
        except psutil.Error:
            procs = []
        for proc in procs + _service(env)[1]:
            hwm = _hwm_mb(proc.pid)
            if hwm is None:
                continue
            entry = seen.setdefault(proc.pid, {"kind": kind(proc, child.pid, state), "peak_mb": 0.0, "cpu_s": 0.0})
            entry["peak_mb"] = max(entry["peak_mb"], hwm)
            try:
                times = proc.cpu_times()
                entry["cpu_s"] = times.user + times.system - cpu0.get(proc.pid, 0.0)
            except psutil.Error:
                pass

    def sample():
        while not done.is_set():
            look()
            done.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    output = child.stdout.read()
    _, status, usage = os.wait4(child.pid, 0)
    child.returncode = os.waitstatus_to_exitcode(status)
    wall = time.perf_counter() - started
    done.set()
    sampler.join()
    look()  # what the service's processes did up to the end
    if child.returncode != 0:
        raise RuntimeError(f"{' '.join(command)} exited {child.returncode}:\n{output.decode()[-3000:]}")
    cli = seen.setdefault(child.pid, {"kind": "CLI", "peak_mb": 0.0, "cpu_s": 0.0})
    # wait4's ru_maxrss is the largest of the CLI and the children it waited for: the CLI's own only
    # when it is above every child's; otherwise its last VmHWM seen.
    children = max((e["peak_mb"] for pid, e in seen.items() if pid != child.pid and pid not in cpu0), default=0.0)
    if usage.ru_maxrss / 1024 > children + 1:
        cli["peak_mb"] = usage.ru_maxrss / 1024
    cli["cpu_s"] = max(cli["cpu_s"], usage.ru_utime + usage.ru_stime - sum(
        e["cpu_s"] for pid, e in seen.items() if pid != child.pid and e["kind"] != "service (scheduler)"
        and pid not in cpu0))
    peak, cpu, count = {}, {}, {}
    for entry in seen.values():
        peak[entry["kind"]] = max(peak.get(entry["kind"], 0.0), entry["peak_mb"])
        cpu[entry["kind"]] = cpu.get(entry["kind"], 0.0) + entry["cpu_s"]
        count[entry["kind"]] = count.get(entry["kind"], 0) + 1
    return {"wall_s": round(wall, 1), "cpu_s": {k: round(v, 1) for k, v in cpu.items()},
            "peak_mb": {k: round(v) for k, v in peak.items()}, "processes": count}


def write_captions(path: str, rows: int, batch: int = 100_000) -> None:
    """ROWS captions in five languages, written a batch at a time."""
    languages = list(SENTENCES)
    with pq.ParquetWriter(path, pa.schema([("id", pa.string()), ("text", pa.string())])) as writer:
        for start in range(0, rows, batch):
            numbers = range(start, min(rows, start + batch))
            writer.write_table(pa.table({"id": [f"c{i:09d}" for i in numbers],
                                         "text": [SENTENCES[languages[i % 5]].format(i) for i in numbers]}))


def repeated(path: str, out: str, times: int, extra=None) -> str:
    """The JSONL rows of PATH, TIMES over, each copy's ids made new (`extra` adds columns)."""
    rows = [json.loads(line) for line in open(path) if line.strip()]
    with open(out, "w") as handle:
        for copy in range(times):
            for row in rows:
                row = {**row, "id": f"{row['id']}-{copy}", **(extra(row) if extra else {})}
                handle.write(json.dumps(row) + "\n")
    return out


def release_config(folder: str, times: int) -> str:
    """The demo's release, its caption and QA inputs TIMES over (the images as they are)."""
    captions = repeated(os.path.join(SAMPLE, "captions.jsonl"), os.path.join(folder, "captions.jsonl"), times)
    qa = repeated(os.path.join(SAMPLE, "mmeb.jsonl"), os.path.join(folder, "mmeb.jsonl"), times,
                  lambda row: {"image": os.path.join(SAMPLE, row["image"])} if row.get("image") else {})
    demo = open(os.path.join(ROOT, "data", "releases", "demo.yaml")).read()
    demo = demo.replace("../sample/captions.jsonl", captions).replace("../sample/mmeb.jsonl", qa)
    demo = demo.replace("../sample/images.csv", os.path.join(SAMPLE, "images.csv"))
    path = os.path.join(folder, "release.yaml")
    open(path, "w").write(demo)
    return path


def commands(name: str, folder: str, scale: int, quick: bool) -> tuple[list[str], int]:
    """(argv, rows) of one command on input SCALE times the base size."""
    out = os.path.join(folder, f"{name}-{scale}-out")
    if name == "identify-language":
        rows = (20_000 if quick else 200_000) * scale
        path = os.path.join(folder, f"captions-{rows}.parquet")
        write_captions(path, rows)
        return [XMDATA, "identify-language", path, "--out", out, "-q"], rows
    from xmdata.models.tiny import cached_tiny_models

    tiny = {kind: spec.name_or_path for kind, spec in cached_tiny_models(seed=0).items()}  # as the demo's
    base = os.path.join(SAMPLE, "captions.jsonl")
    times = scale * (1 if quick else 10)
    if name == "translate":  # the demo's translation: 8 beams, 4 candidates, three targets
        path = repeated(base, os.path.join(folder, f"translate-{times}.jsonl"), times)
        return [XMDATA, "translate", path, "--out", out, "--targets", "fr,de,ar", "--model", tiny["m2m100"],
                "--num-beams", "8", "--num-candidates", "4", "--qe-model", tiny["cometkiwi"], "-q"], 43 * times
    if name == "score":
        path = repeated(base, os.path.join(folder, f"pairs-{times}.jsonl"), times,
                        lambda row: {"image_path": f"images/{row['image_id']}.png"})
        return [XMDATA, "score", path, "--image-root", SAMPLE, "--clip-model", tiny["open_clip"], "--out", out,
                "-q"], 43 * times
    if name == "release":
        sub = os.path.join(folder, f"release-{times}")
        os.makedirs(sub, exist_ok=True)
        return [XMDATA, "release", "--config", release_config(sub, times), "--out", out, "-q"], 43 * times
    raise SystemExit(f"unknown command {name!r}")


def table(name: str, results: list[tuple[int, dict]]) -> list[str]:
    kinds = sorted({k for _, r in results for k in r["peak_mb"]}, key=lambda k: (k != "CLI", k))
    lines = [f"{name}: rows | wall s | CPU-s (all) | " + " | ".join(f"peak MB {k}" for k in kinds)]
    for rows, r in results:
        lines.append(f"  {rows:>9} | {r['wall_s']:>6} | {sum(r['cpu_s'].values()):>7.1f} | " + " | ".join(
            f"{r['peak_mb'].get(k, '-')} (x{r['processes'].get(k, 0)})" for k in kinds))
    first, last = results[0][1]["peak_mb"], results[-1][1]["peak_mb"]
    ratios = ", ".join(f"{k} {last[k] / first[k]:.2f}x" for k in kinds if k in first and k in last and first[k])
    lines.append(f"  peak RSS at {results[-1][0] // results[0][0]}x the rows over 1x: {ratios}")
    return lines


def main(argv: list[str] | None = None) -> None:
    argv = argv or []
    quick = "--quick" in argv
    names = [a for a in argv if not a.startswith("-")] or ["identify-language", "translate", "score", "release"]
    env = dict(os.environ)
    folder = tempfile.mkdtemp(prefix="xmdata-memory-")
    try:
        for name in names:
            results = []
            for scale in (1, 10):
                argv_, rows = commands(name, folder, scale, quick)
                results.append((rows, measure(argv_, env)))
                print(f"{name} {rows} rows: {json.dumps(results[-1][1])}", flush=True)
            print("\n".join(table(name, results)), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main(sys.argv[1:])
