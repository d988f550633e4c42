"""Builds that cost what changed: what a rebuild costs with the memo of model work, as a ratio of a
from-scratch build, in one run.

`python -m bench.incremental [--rows N] [--cases appended,edited,plan,target,qe]` (default 2,000
captions, every case; `./run bench incremental`)

`xmdata translate` as a user runs it (the `xmdata` entry point), the tiny M2M100 (4 beams, 2
candidates) and tiny COMETKiwi, targets fr and ar, 8 shards, each command with its own Prefect server
and two Dask workers (XMDATA_SERVICE=off: every process is the command's, followed by
bench/memory_scaling.measure; a command's start is then in every figure, the rebuilds' too).
CPU-seconds summed over every process. Each rebuild starts from a copy of the folder of the first
build with the memo, as a user's next build of the same folder would; then the same input is built
again with `--memo off` in a fresh folder and its data and rejects compared byte for byte.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

import pyarrow as pa
import pyarrow.parquet as pq

from bench.memory_scaling import measure

XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")
OUTPUTS = ("translations.parquet", "translated.parquet", "translation_rejects.parquet", "candidates.parquet")
SUBJECTS = ["dog", "cat", "child", "woman", "man", "horse", "bird", "boy", "girl", "cyclist", "farmer", "dancer"]
ACTIONS = ["runs across", "sits on", "looks at", "walks past", "stands near", "jumps over", "sleeps under",
           "plays beside"]
PLACES = ["the old bridge", "a red car", "the wooden fence", "a small boat", "the busy market", "a tall tree",
          "the quiet river", "a blue door", "the stone wall", "a green field"]


CASES = ("appended", "edited", "plan", "target", "qe")


def captions(n: int, start: int = 0) -> list[dict]:
    """Distinct English captions of a few lengths (the shapes of a caption set)."""
    rows = []
    for i in range(start, start + n):
        s, a, p = SUBJECTS[i % 12], ACTIONS[(i // 12) % 8], PLACES[(i // 96) % 10]
        extra = "" if i % 3 else f" in the morning number {i}"
        rows.append({"id": f"c{i:06d}", "text": f"A {s} {a} {p}{extra} ({i})."})
    return rows


def write(rows: list[dict], path: str) -> str:
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def build(source: str, out: str, memo: str, models: dict, targets: str = "fr,ar", shards: int = 8,
          qe_model: str | None = None) -> tuple[float, float, dict]:
    argv = [XMDATA, "translate", source, "--targets", targets, "--model", models["m2m100"].name_or_path,
            "--qe-model", qe_model or models["cometkiwi"].name_or_path, "--num-beams", "4", "--num-candidates", "2",
            "--lid-accept", "ar=ar,fa,ur,hi,fr,en,de", "--shards", str(shards), "--out", out, "--memo", memo, "-q",
            "--workers", "2"]
    measured = measure(argv, {**os.environ, "XMDATA_SERVICE": "off"})
    run = json.load(open(os.path.join(out, "run.json")))
    used = {stage: counts.get("memo", {}) for stage, counts in run.items()}
    used["_work_s"] = {stage: counts.get("work_s", 0.0) for stage, counts in run.items()}
    return sum(measured["cpu_s"].values()), measured["wall_s"], used


def same_outputs(a: str, b: str) -> bool:
    return all(open(os.path.join(a, n), "rb").read() == open(os.path.join(b, n), "rb").read() for n in OUTPUTS)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.incremental")
    parser.add_argument("--rows", type=int, default=2000)
    parser.add_argument("--cases", default=",".join(CASES), help="the rebuilds to measure, of: " + ", ".join(CASES))
    args = parser.parse_args(sys.argv[2:] if sys.argv[1:2] == ["incremental"] else sys.argv[1:])
    wanted = args.cases.split(",")
    if unknown := set(wanted) - set(CASES):
        parser.error(f"--cases: unknown {', '.join(sorted(unknown))}; choose from {', '.join(CASES)}")
    from xmdata.models.tiny import cached_tiny_models

    models, other = cached_tiny_models(seed=0), cached_tiny_models(seed=1)
    root = tempfile.mkdtemp(prefix="xmdata-bench-incremental-")
    memo = os.path.join(root, "memo")
    n = args.rows
    base = captions(n)
    appended = base + captions(max(1, n // 100), start=n)
    edited = [dict(r) for r in base]
    edited[n // 2]["text"] = "A brown dog swims in the cold lake (edited)."
    inputs = {name: write(rows, os.path.join(root, f"{name}.parquet"))
              for name, rows in (("base", base), ("appended", appended), ("edited", edited))}
    scratch_cpu, scratch_wall, scratch_used = build(inputs["base"], os.path.join(root, "off-base"), "off", models)
    work = scratch_used.pop("_work_s")
    first_cpu, first_wall, first_used = build(inputs["base"], os.path.join(root, "memo-base"), memo, models)
    first_used.pop("_work_s")
    candidates = pq.read_metadata(os.path.join(root, "memo-base", "candidates.parquet")).num_rows
    memo_bytes = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(memo) for f in fs
                     if f.endswith(".parquet") and os.sep + "runs" not in d)
    print(f"{n} captions, targets fr+ar, 8 shards, tiny M2M100 (4 beams, 2 candidates) and COMETKiwi; "
          f"CPU-s over every process")
    print(f"from scratch, --memo off: {scratch_cpu:.1f} CPU-s ({scratch_wall:.1f} s wall) = 1.00x; stages' work "
          + ", ".join(f"{stage} {seconds:.1f} s" for stage, seconds in work.items()) + " (candidate_lid runs on "
          "every rebuild: this is what keeping language ID per build costs)")
    print(f"from scratch, empty memo: {first_cpu:.1f} CPU-s ({first_wall:.1f} s) = {first_cpu / scratch_cpu:.2f}x "
          f"(goal <= 1.05x); memo {memo_bytes / 1e6:.2f} MB for {candidates:,} candidates = "
          f"{memo_bytes / candidates:.0f} B a candidate, {memo_bytes / candidates:.0f} MB per million")
    cases = {
        "appended": ("1 % captions appended", dict(source=inputs["appended"]), 0.20),
        "edited": ("one caption edited", dict(source=inputs["edited"]), 0.20),
        "plan": ("a new shard plan (5 shards)", dict(source=inputs["base"], shards=5, fresh=True), 0.20),
        "target": ("target de added (fr+ar -> fr+ar+de)", dict(source=inputs["base"], targets="fr,ar,de"), 0.65),
        "qe": ("the QE model changed", dict(source=inputs["base"], qe_model=other["cometkiwi"].name_or_path), None),
    }
    cases = [cases[name] for name in CASES if name in wanted]
    print(f"{'rebuild':38} {'CPU-s':>8} {'wall s':>8} {'ratio':>7} {'goal':>6}  same bytes as --memo off  memo")
    for number, (name, case, goal) in enumerate(cases):
        case = dict(case)
        source, fresh = case.pop("source"), case.pop("fresh", False)
        folder = os.path.join(root, f"case-{number}")
        if not fresh:  # the user's next build of the same folder
            shutil.copytree(os.path.join(root, "memo-base"), folder)
        cpu, wall, used = build(source, folder, memo, models, **case)
        used.pop("_work_s")
        build(source, folder + "-off", "off", models, **case)  # the same input, no memo, a fresh folder
        same = same_outputs(folder, folder + "-off")
        units = "; ".join(f"{stage}: " + ", ".join(f"{kind} {c.get('served', 0)} served / {c.get('computed', 0)} computed"
                                                   for kind, c in u.items()) for stage, u in used.items() if u)
        print(f"{name:38} {cpu:8.1f} {wall:8.1f} {cpu / scratch_cpu:6.2f}x {('<=' + str(goal)) if goal else '':>6}  "
              f"{'yes' if same else 'NO':<25} {units}", flush=True)
    print(f"(first build's memo use: {first_used.get('translate')}; folders under {root})")


if __name__ == "__main__":
    main()
