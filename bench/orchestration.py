"""Orchestration cost, as CPU-seconds summed over every process (CLI, Prefect server, scheduler,
workers) and wall, in one run:

- fixed cost: `xmdata identify-language` on a one-row input the very first time, twice: in a new
  environment (no template of Prefect's database yet: Prefect migrates its own) and, as after
  `./run setup`, in a new Prefect home (its database copied from the template); the service starts,
  its cluster after Prefect, counted with the cold run until up. Then again with the service warm;
  time from the command's start to its first language-ID shard finished, and the whole command;
- language ID over 200k captions through the CLI at 1 and 8 shards as a user runs it (in-process: see
  LIGHT_ROWS in tasks/translation/language_id.py), in ROUNDS rounds, each with its own bare loop of
  fastText `predict` over the same texts (reading them from Parquet included; run before and after the
  round's commands, their mean taken) and its own one-row command subtracted (the machine's speed
  drifts: a ratio is taken within a round, the median given);
  then at 8, 64 and 1,000 shards forced onto the warm cluster, less the median one-row command there;
- a trivial stage (upper-casing 100 rows) at 1, 8, 64, 100, 1,000 and 10,000 shards on the warm
  cluster, against the same `process_shard` calls in a plain loop.
Goals: cold fixed cost ≤ 15 s, warm ≤ 3 s; language ID ≤ 1.2× the bare loop's CPU-s and wall (the
command's fixed cost apart; issue 72); 100 trivial shards ≤ 5 s more than the loop; 10,000 shards complete.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from bench import isolated_home
from bench.cpu_meter import CpuMeter

ROWS_PER_SHARD = 100
ROUNDS = 5
INPROCESS_SHARDS = ("1", "8")  # as a user runs it: auto keeps 200k captions in the command's process
# Forced onto the warm cluster; the first is its workers' first language ID.
CLUSTER_RUNS = (("8 on the cluster (workers cold)", "8"), ("8 on the cluster", "8"),
                ("64 on the cluster", "64"), ("1000 on the cluster", "1000"))
# A one-row command by each path a 200k run takes: its own process (1 shard) or the warm cluster
# (more shards; the client imports distributed and connects). On the cluster, the median of three is
# the fixed cost subtracted, so that one noisy start does not move the ratio.
COLD_RUNS = ("cold, new environment", "cold")
FIXED_RUNS = (("warm", "auto"), ("warm again", "auto"), ("warm 3", "auto"),
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


def bare_lid(path: str) -> tuple[float, float]:
    """(CPU-s, wall s) of the bare loop: load lid.176, read the texts, fastText `predict` each."""
    import resource

    import fasttext

    from xmdata.models.fasttext_lid import bundled_lid176_path

    before, started = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter()
    model = fasttext.load_model(bundled_lid176_path())
    for text in pq.read_table(path, columns=["text"]).column("text").to_pylist():
        model.predict(text.replace("\n", " "), k=1)
    after, wall = resource.getrusage(resource.RUSAGE_SELF), time.perf_counter() - started
    return after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, wall


def one_row_run(root: str, one: str, env: dict, label: str, executor: str = "auto") -> dict:
    out = os.path.join(root, f"fixed-{label.replace(' ', '-').replace(',', '')}")
    return command_run(["identify-language", one, "--out", out, "--shards", "1", "--executor", executor], env,
                       os.path.join(out, "language_id", "_done", "shard-00000.json"))


def cold_runs(root: str, one: str, env: dict, figures: dict) -> None:
    """The very first command twice: with no template of Prefect's database (it is made from this
    run's), then in a new Prefect home (copied from it). The service's cluster starts after the
    command's first shard: its start is counted with the cold run, not the next."""
    from prefect.settings import PREFECT_HOME

    from xmdata.runtime.prefect_db import template_paths
    from xmdata.service.service import cluster_address
    from xmdata.service.service_stop import stop_service

    home = os.path.join(root, "prefect")
    if os.path.realpath(str(PREFECT_HOME.value())) != os.path.realpath(home):  # Prefect imported before main()
        raise RuntimeError(f"the bench needs its own Prefect home ({home}), not {PREFECT_HOME.value()}")
    templates = [t for t in template_paths() if os.path.exists(t)]
    for template in templates:
        os.replace(template, template + ".bench-aside")
    try:
        for label in COLD_RUNS:
            stop_service()
            shutil.rmtree(home, ignore_errors=True)
            figures[f"fixed {label}"] = one_row_run(root, one, env, label)
            with CpuMeter() as started:
                cluster_address()
            for key in ("cpu_s", "wall_s"):
                figures[f"fixed {label}"][key] += getattr(started, key)
    finally:  # the installed templates back (the run made one of the same schema)
        for template in templates:
            os.replace(template + ".bench-aside", template)


def fixed_runs(root: str, one: str, env: dict, figures: dict, executor: str) -> None:
    for label in [label for label, by in FIXED_RUNS if by == executor]:
        figures[f"fixed {label}"] = one_row_run(root, one, env, label, executor)


def lid_rounds(root: str, one: str, big: str, env: dict, figures: dict) -> None:
    """Bare loop, one-row command, then the 200k commands, ROUNDS times: each ratio within a round."""
    figures["lid rounds"] = []
    for r in range(ROUNDS):
        before = bare_lid(big)
        fixed = one_row_run(root, one, env, f"round {r}")
        round_ = {"fixed": fixed["cpu_s"], "fixed_wall": fixed["wall_s"]}
        for shards in INPROCESS_SHARDS:
            out = os.path.join(root, f"lid-round{r}-{shards}")
            round_[shards] = command_run(["identify-language", big, "--out", out, "--shards", shards], env)
        after = bare_lid(big)  # the loop on both sides of the commands: a drift within the round averages out
        round_.update(bare=(before[0] + after[0]) / 2, bare_wall=(before[1] + after[1]) / 2)
        figures["lid rounds"].append(round_)


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
    root, env = isolated_home("xmdata-bench-")
    from bench.orchestration_trivial import trivial_figures
    from xmdata.service.service_stop import stop_service

    one = os.path.join(root, "one.parquet")
    write_captions(one, 1)
    big = os.path.join(root, "captions.parquet")
    write_captions(big, CAPTIONS)
    figures: dict = {}
    try:
        cold_runs(root, one, env, figures)
        fixed_runs(root, one, env, figures, "auto")
        lid_rounds(root, one, big, env, figures)
        for label, shards in CLUSTER_RUNS:  # the first cluster run is its workers' first language ID
            out = os.path.join(root, f"lid-{label.replace(' ', '-')}")
            figures[f"lid {label}"] = command_run(
                ["identify-language", big, "--out", out, "--shards", shards, "--executor", "dask"], env)
        fixed_runs(root, one, env, figures, "dask")  # after the cold-worker run, so that it stays cold
        trivial_figures(os.path.join(root, "trivial"), figures)
    finally:
        stop_service()
        print_figures(figures)  # what was measured, also when a later part failed
    return figures


def lid_ratio(round_: dict, shards: str, key: str) -> float:
    """A 200k command's CPU-s or wall, less its round's one-row command, over the round's bare loop."""
    fixed, bare = ("fixed", "bare") if key == "cpu_s" else ("fixed_wall", "bare_wall")
    return (round_[shards][key] - round_[fixed]) / round_[bare]


def print_figures(f: dict) -> None:
    print("orchestration: CPU-s summed over CLI, Prefect server, scheduler and workers; wall in s")
    for label in [k[len("fixed "):] for k in f if k.startswith("fixed ")]:
        r = f[f"fixed {label}"]
        print(f"  fixed cost, {label:21s}  first shard done after {r['first_shard_s']:6.2f} s; "
              f"whole command {r['wall_s']:6.2f} s wall, {r['cpu_s']:6.2f} CPU-s")
    if f.get("lid rounds"):
        print(f"  language ID, {CAPTIONS:,} captions, in-process as `auto` runs them; each round: its bare "
              f"fastText loop, its one-row command (fixed cost), the 200k commands less that fixed cost:")
        for r, round_ in enumerate(f["lid rounds"]):
            print(f"    round {r + 1}: bare loop {round_['bare']:.2f} CPU-s {round_['bare_wall']:.2f} s wall, fixed "
                  f"{round_['fixed']:.2f} CPU-s {round_['fixed_wall']:.2f} s wall; " + "; ".join(
                      f"{shards} shard(s) {round_[shards]['cpu_s']:.2f} CPU-s = {lid_ratio(round_, shards, 'cpu_s'):.2f}x, "
                      f"{round_[shards]['wall_s']:.2f} s wall = {lid_ratio(round_, shards, 'wall_s'):.2f}x"
                      for shards in INPROCESS_SHARDS if shards in round_))
        for shards in INPROCESS_SHARDS:
            for what, key in (("CPU-s", "cpu_s"), ("wall", "wall_s")):
                ratios = sorted(lid_ratio(r, shards, key) for r in f["lid rounds"] if shards in r)
                if ratios:
                    print(f"    {shards} shard(s): median {ratios[len(ratios) // 2]:.2f}x the bare loop's {what} "
                          f"(rounds {ratios[0]:.2f}–{ratios[-1]:.2f}x)")
    runs = sorted(f[k]["cpu_s"] for k in ("fixed warm, cluster", "fixed warm again, cluster", "fixed warm 3, cluster")
                  if k in f)
    if runs and f.get("lid rounds"):
        fixed, bare = runs[len(runs) // 2], sorted(r["bare"] for r in f["lid rounds"])[len(f["lid rounds"]) // 2]
        print(f"  language ID forced onto the warm cluster, less the median one-row command there ({fixed:.2f} "
              f"CPU-s), against the median bare loop ({bare:.2f} CPU-s):")
        for label, _ in [run for run in CLUSTER_RUNS if f"lid {run[0]}" in f]:
            r = f[f"lid {label}"]
            work = r["cpu_s"] - fixed
            print(f"    {label:>31s} shards  {r['wall_s']:6.2f} s wall, {r['cpu_s']:6.2f} CPU-s; less the fixed: "
                  f"{work:6.2f} CPU-s = {work / bare:4.2f}x the bare loop")
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
