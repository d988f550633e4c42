"""What a LocalCluster's workers cost until each has its first model result: spawned, or forked from a
forkserver (runtime/worker_start.py), per model kind, in one run. `python -m bench worker_start`.

Each figure is one fresh driver process that starts `start_local_cluster(WORKERS)` and has every
worker load one tiny model (`registry.get_model`, CPU) and give one result (a translation, a QE score,
a CLIP score, an embedding, a language label). Columns, CPU-s (user + system, psutil):
  cluster   every process from the cluster's start to the last worker's first result: this process
            (scheduler and nannies live here), the forkserver, the workers, Python's resource tracker;
  ready     one worker, from its start to its model loaded (imports + load), mean over the workers;
  back      the same cluster's total again after `client.restart()` (new worker processes, as the
            service brings back its retired workers): what a worker start costs once the forkserver runs;
and per worker RSS and PSS (/proc/PID/smaps_rollup, MB) after its first result, and the forkserver's.
Modes: spawn (XMDATA_WORKER_FORKSERVER=off), forkserver with the model imports (the service's
cluster), forkserver with the light imports only (a run's own cluster).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

WORKERS = 2
MODES = {"spawn": ("off", False), "forkserver+models": ("on", True), "forkserver light": ("on", False)}
KINDS = {"fastText LID": ("language_identifier", "fasttext"), "M2M100": ("translator", "m2m100"),
         "MADLAD": ("translator", "madlad"), "COMETKiwi": ("quality_estimator", "cometkiwi"),
         "open_clip": ("clip_scorer", "open_clip"), "hf embedder": ("embedder", "hf")}


def first_result(kind: str, spec: dict) -> dict:
    """On a worker: load the model, give one result; this process's CPU-s at each point."""
    import psutil
    from PIL import Image

    from xmdata.models.base import ModelSpec
    from xmdata.models.registry import get_model

    def cpu():
        times = psutil.Process().cpu_times()
        return times.user + times.system

    model = get_model(kind, ModelSpec(**spec))
    ready = cpu()
    if kind == "language_identifier":
        model.predict(model.prepare(["The dog runs in the house."]))
    elif kind == "translator":
        model.predict(model.prepare(["The dog runs in the house."], "en", "fr"), num_beams=2, num_candidates=1,
                      max_new_tokens=8)
    elif kind == "quality_estimator":
        model.predict(model.prepare(["The dog runs in the house."], ["Le chien court dans la maison."]))
    elif kind == "clip_scorer":
        model.predict(model.prepare([Image.new("RGB", (32, 32), "red")], ["a red square"]))
    else:
        model.embed_texts(["a red square"])
    return {"pid": os.getpid(), "ready": ready, "result": cpu()}


def memory(pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MB."""
    fields = {}
    for line in open(f"/proc/{pid}/smaps_rollup"):
        name, _, value = line.partition(":")
        if value.strip().endswith("kB"):
            fields[name] = int(value.split()[0]) / 1024
    return round(fields["Rss"], 1), round(fields["Pss"], 1)


def measure(kind: str, spec: dict, models: bool) -> dict:
    """In a fresh process (its own forkserver): the cluster's CPU-s to every worker's first result."""
    import psutil

    from xmdata.runtime.cluster import close_local_cluster, start_local_cluster

    me = psutil.Process()

    def tree_cpu() -> dict[int, float]:
        cpu = {}
        for proc in [me, *me.children(recursive=True)]:
            try:
                times = proc.cpu_times()
                cpu[proc.pid] = times.user + times.system
            except psutil.NoSuchProcess:
                pass
        return cpu

    def since(before: dict[int, float]) -> float:
        """CPU-s since `before`: a process started since counts whole (one that ended meanwhile, the
        old workers at a restart, is not counted: their shutdown)."""
        return sum(cpu - before.get(pid, 0.0) for pid, cpu in tree_cpu().items())

    def round_trip() -> list[dict]:
        workers = list(client.scheduler_info(n_workers=-1)["workers"])
        futures = [client.submit(first_result, kind, spec, workers=[w], pure=False, allow_other_workers=False)
                   for w in workers]
        return client.gather(futures)

    start = tree_cpu()
    cluster, client = start_local_cluster(WORKERS, models=models)
    try:
        client.wait_for_workers(WORKERS)
        results = round_trip()
        first = since(start)
        forkserver = [p for p in me.children() if "multiprocessing.forkserver" in " ".join(p.cmdline())]
        mem = {"workers": [memory(r["pid"]) for r in results],
               "forkserver": memory(forkserver[0].pid) if forkserver else None}
        before = tree_cpu()
        client.restart()
        back_results = round_trip()
        back = since(before)
    finally:
        close_local_cluster(cluster, client)
    return {"cluster": round(first, 2), "ready": round(sum(r["ready"] for r in results) / len(results), 2),
            "back": round(back, 2), "ready_back": round(sum(r["ready"] for r in back_results) / len(results), 2),
            "memory": mem}


def run(mode: str, kind: str, spec: dict) -> dict:
    method, models = MODES[mode]
    env = {**os.environ, "XMDATA_WORKER_FORKSERVER": method, "DASK_LOGGING__DISTRIBUTED": "error"}
    code = (f"import json, warnings; warnings.simplefilter('ignore'); from bench.worker_start import measure; "
            f"print(json.dumps(measure({KINDS[kind][0]!r}, {spec!r}, {models!r})))")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise RuntimeError(f"bench.worker_start {mode} {kind}: failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> list[dict]:
    from bench.model_process import specs

    models = specs()
    figures = []
    for kind, (_, backend) in KINDS.items():
        by_mode = {mode: run(mode, kind, models[backend]) for mode in MODES}
        spawn = by_mode["spawn"]
        for mode, f in by_mode.items():
            mem = f["memory"]
            print(f"{kind:<12} {mode:<18} cluster {f['cluster']:6.2f} CPU-s ({f['cluster'] / spawn['cluster']:.2f}x)  "
                  f"ready {f['ready']:5.2f} ({f['ready'] / spawn['ready']:.2f}x)  back {f['back']:6.2f} "
                  f"({f['back'] / spawn['back']:.2f}x, ready {f['ready_back']:.2f})  worker RSS/PSS MB "
                  f"{' '.join(f'{r:.0f}/{p:.0f}' for r, p in mem['workers'])}  forkserver "
                  f"{'%.0f/%.0f' % tuple(mem['forkserver']) if mem['forkserver'] else '-'}", flush=True)
            figures.append({"kind": kind, "mode": mode, **f})
    return figures


if __name__ == "__main__":
    main()
