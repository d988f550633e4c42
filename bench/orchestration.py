"""Orchestration cost, as CPU-seconds summed over every process (CLI, Prefect server, scheduler,
workers) and wall, in one run:

- fixed cost: `xmdata identify-language` on a one-row input, the very first time (fresh Prefect
  home: the service starts, its database is created; the cluster, which starts after Prefect,
  counted with it until up) and again with the service warm; time from the command's start to
  its first language-ID shard finished, and the whole command;
- language ID over 200k captions through the CLI at 1 and 8 shards as a user runs it (in-process: see
  LIGHT_ROWS in tasks/translation/language_id.py), and at 8, 64 and 1,000 shards forced onto the warm cluster,
  against a bare loop of fastText `predict` over the same texts (reading them from Parquet included);
  each less the fixed cost of a one-row command by the same path;
- a trivial stage (upper-casing 100 rows) at 1, 8, 64, 100, 1,000 and 10,000 shards on the warm
  cluster, against the same `process_shard` calls in a plain loop.
Goals: warm fixed cost ≤ 3 s; language ID ≤ 1.5× the bare loop's CPU-s (the command's fixed cost
apart); 100 trivial shards ≤ 5 s more than the loop; 10,000 shards complete.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench.cpu_meter import CpuMeter

ROWS_PER_SHARD = 100
# (label, shards, executor): as a user runs it (auto), then forced onto the warm cluster.
LID_RUNS = (("1", "1", "auto"), ("8", "8", "auto"), ("8 on the cluster (workers cold)", "8", "dask"),
            ("8 on the cluster", "8", "dask"), ("64 on the cluster", "64", "dask"),
            ("1000 on the cluster", "1000", "dask"))
# A one-row command by each path a 200k run takes: its own process (1 shard) or the warm cluster
# (more shards; the client imports distributed and connects). The median of three is the fixed cost
# subtracted, so that one noisy start does not move the ratio.
FIXED_RUNS = (("cold", "auto"), ("warm", "auto"), ("warm again", "auto"), ("warm 3", "auto"),
              ("warm, cluster", "dask"), ("warm again, cluster", "dask"), ("warm 3, cluster", "dask"))
CAPTIONS = 200_000
WORDS = ["red", "bicycle", "rojo", "vélo", "Fahrrad", "дом", "猫", "bahari", "casa", "street", "park", "enfant"]


def shout(table: pa.Table, params: dict):
    """The trivial stage: upper-case a text column."""
    from xmdata.tasks.build.rejects import no_rejects

    return table.set_column(1, "text", pc.utf8_upper(table.column("text"))), no_rejects()


def write_captions(path: str, n: int) -> None:
    texts = [f"{WORDS[i % 12]} {WORDS[(i * 7) % 12]} {WORDS[(i * 5) % 12]} number {i}" for i in range(n)]
    pq.write_table(pa.table({"id": [f"c{i:07d}" for i in range(n)], "text": texts}), path)


def command_run(args: list[str], env: dict, first_record: str | None = None) -> dict:
    with CpuMeter() as meter:
        started = time.time()
        subprocess.run([os.path.join(os.path.dirname(sys.executable), "xmdata"), *args, "-q"], env=env,
                       check=True, stdout=subprocess.DEVNULL)
    first = os.stat(first_record).st_mtime - started if first_record else None
    return {"wall_s": meter.wall_s, "cpu_s": meter.cpu_s, "first_shard_s": first}


def bare_lid_cpu(path: str) -> float:
    import resource

    import fasttext

    from xmdata.models.fasttext_lid import bundled_lid176_path

    before = resource.getrusage(resource.RUSAGE_SELF)
    model = fasttext.load_model(bundled_lid176_path())
    for text in pq.read_table(path, columns=["text"]).column("text").to_pylist():
        model.predict(text.replace("\n", " "), k=1)
    after = resource.getrusage(resource.RUSAGE_SELF)
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime


def fixed_runs(root: str, one: str, env: dict, figures: dict, executor: str) -> None:
    from xmdata.runtime.service import cluster_address

    for label in [label for label, by in FIXED_RUNS if by == executor]:
        out = os.path.join(root, f"fixed-{label.replace(' ', '-').replace(',', '')}")
        figures[f"fixed {label}"] = command_run(
            ["identify-language", one, "--out", out, "--shards", "1", "--executor", executor], env,
            os.path.join(out, "language_id", "_done", "shard-00000.json"))
        if label == "cold":  # the service's cluster starts after the cold command's first shard:
            with CpuMeter() as started:  # its start is counted with the cold run, not the next
                cluster_address()
            for key in ("cpu_s", "wall_s"):
                figures["fixed cold"][key] += getattr(started, key)


def trivial_shards(root: str, n: int) -> list[str]:
    os.makedirs(os.path.join(root, "input"), exist_ok=True)
    paths = []
    for i in range(n):
        path = os.path.join(root, "input", f"shard-{i:05d}.parquet")
        ids = [f"s{i}-r{j}" for j in range(ROWS_PER_SHARD)]
        pq.write_table(pa.table({"id": ids, "text": [f"text {j}" for j in range(ROWS_PER_SHARD)]}), path)
        paths.append(path)
    return paths


def main() -> dict:
    root = tempfile.mkdtemp(prefix="xmdata-bench-")
    os.environ.update(PREFECT_HOME=os.path.join(root, "prefect"), XMDATA_CACHE=os.path.join(root, "cache"),
                      PREFECT_LOGGING_LEVEL="WARNING", DASK_LOGGING__DISTRIBUTED="warning")
    os.environ.pop("PREFECT_API_URL", None)
    from bench.orchestration_trivial import trivial_figures
    from xmdata.runtime.service import stop_service

    env = {k: v for k, v in os.environ.items() if k not in ("XMDATA_EXECUTOR", "XMDATA_DASK_ADDRESS")}
    one = os.path.join(root, "one.parquet")
    write_captions(one, 1)
    big = os.path.join(root, "captions.parquet")
    write_captions(big, CAPTIONS)
    figures: dict = {}
    try:
        fixed_runs(root, one, env, figures, "auto")
        bare = bare_lid_cpu(big)
        figures["lid bare loop cpu_s"] = bare
        for label, shards, executor in LID_RUNS:  # the first cluster run is its workers' first language ID
            out = os.path.join(root, f"lid-{label.replace(' ', '-')}")
            figures[f"lid {label}"] = command_run(
                ["identify-language", big, "--out", out, "--shards", shards, "--executor", executor], env)
        fixed_runs(root, one, env, figures, "dask")  # after the cold-worker run, so that it stays cold
        trivial_figures(os.path.join(root, "trivial"), figures)
    finally:
        stop_service()
        print_figures(figures)  # what was measured, also when a later part failed
    return figures


def print_figures(f: dict) -> None:
    print("orchestration: CPU-s summed over CLI, Prefect server, scheduler and workers; wall in s")
    for label in [k[len("fixed "):] for k in f if k.startswith("fixed ")]:
        r = f[f"fixed {label}"]
        print(f"  fixed cost, {label:10s}  first shard done after {r['first_shard_s']:6.2f} s; "
              f"whole command {r['wall_s']:6.2f} s wall, {r['cpu_s']:6.2f} CPU-s")
    if "lid bare loop cpu_s" not in f:
        return
    fixed = {}
    for path in ("", ", cluster"):  # the median of the warm runs by each path (a failed run: fewer)
        runs = sorted(f[key]["cpu_s"] for key in (f"fixed {k}{path}" for k in ("warm", "warm again", "warm 3"))
                      if key in f)
        if runs:
            fixed[path] = runs[len(runs) // 2]
    bare = f["lid bare loop cpu_s"]
    print(f"  language ID, {CAPTIONS:,} captions: bare fastText loop {bare:.2f} CPU-s; fixed cost (median of 3) "
          + ", ".join(f"{cpu:.2f} CPU-s {'on the warm cluster' if path else 'in-process'}" for path, cpu in fixed.items()))
    for label, _, executor in [run for run in LID_RUNS if f"lid {run[0]}" in f]:
        r = f[f"lid {label}"]
        fixed_cpu = fixed.get(", cluster" if executor == "dask" else "")
        if fixed_cpu is None:
            continue
        work = r["cpu_s"] - fixed_cpu
        print(f"    {label:>31s} shards  {r['wall_s']:6.2f} s wall, {r['cpu_s']:6.2f} CPU-s; less the fixed "
              f"{fixed_cpu:.2f}: {work:6.2f} CPU-s = {work / bare:4.2f}x the bare loop")
    if "trivial loop" not in f:
        return
    loop_per_shard = f["trivial loop"]["cpu_s"] / f["trivial loop"]["shards"]
    print(f"  trivial stage, {ROWS_PER_SHARD} rows a shard: plain loop {1000 * loop_per_shard:.1f} CPU-ms a shard "
          f"({f['trivial loop']['shards']} shards: {f['trivial loop']['wall_s']:.2f} s wall)")
    for key in sorted((k for k in f if k.startswith("trivial flow ")), key=lambda k: int(k.split()[-1])):
        r = f[key]
        n = r["shards"]
        extra = (r["cpu_s"] - n * loop_per_shard) / n
        print(f"    {n:6d} shards  {r['wall_s']:7.2f} s wall ({r['wall_s'] - n * r['loop_wall_per_shard']:+6.2f} s "
              f"vs the loop), {r['cpu_s']:7.2f} CPU-s; orchestration {1000 * extra:5.1f} CPU-ms a shard")
