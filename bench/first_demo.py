"""The first `xmdata demo` on fresh caches and no service, before and after what `./run setup` builds.

before: an empty XMDATA_CACHE and PREFECT_HOME: the demo builds its tiny models (in the command's
        process, before the service starts) and each worker its geocoding tables.
after:  the same, after `python -m xmdata.setup_caches` (not counted): what ./run setup leaves.
Each: `xmdata demo --out DIR` in a subprocess, CPU-s of it and of the service it started
(bench.cpu_meter), then `xmdata down`. The two releases must have the same release_sha256.
`python -m bench first_demo`.
"""
from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile

SERVICE_VARIABLES = ("PREFECT_API_URL", "XMDATA_EXECUTOR", "XMDATA_DASK_ADDRESS")


def first_demo(root: str, warm: bool) -> dict:
    from bench.cpu_meter import CpuMeter

    xmdata = os.path.join(os.path.dirname(sys.executable), "xmdata")
    os.environ.update(XMDATA_CACHE=os.path.join(root, "cache"), PREFECT_HOME=os.path.join(root, "prefect"))
    for name in SERVICE_VARIABLES:
        os.environ.pop(name, None)
    if warm:
        subprocess.run([sys.executable, "-W", "ignore", "-m", "xmdata.setup_caches"], check=True, capture_output=True)
    try:
        with CpuMeter() as meter:
            done = subprocess.run([xmdata, "demo", "--out", os.path.join(root, "out")], capture_output=True, text=True)
    finally:
        subprocess.run([xmdata, "down"], capture_output=True)
    if done.returncode != 0:
        raise RuntimeError(f"bench.first_demo: the demo failed:\n{done.stderr[-2000:]}")
    release = re.search(r"release_sha256 (\w+)", done.stdout + done.stderr)
    return {"wall_s": meter.wall_s, "cli_cpu_s": meter.own_s, "service_cpu_s": meter.service_s,
            "cpu_s": meter.cpu_s, "release_sha256": release.group(1) if release else None}


def main() -> dict:
    """Each run in its own process: Prefect fixes PREFECT_HOME when first imported."""
    import json

    runs = {}
    for label in ("before", "after"):
        root = tempfile.mkdtemp(prefix=f"xmdata-first-demo-{label}-")
        code = f"import json; from bench.first_demo import first_demo; print(json.dumps(first_demo({root!r}, {label == 'after'})))"
        try:
            done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        finally:
            shutil.rmtree(root, ignore_errors=True)  # ~120 MB of geocoding tables and models each
        runs[label] = json.loads(done.stdout.strip().splitlines()[-1])
    for label, run in runs.items():
        print(f"first demo, {label} setup's caches: wall {run['wall_s']:6.1f} s, CPU {run['cpu_s']:6.1f} CPU-s "
              f"(command {run['cli_cpu_s']:5.1f}, service {run['service_cpu_s']:5.1f})", flush=True)
    before, after = runs["before"], runs["after"]
    same = before["release_sha256"] is not None and before["release_sha256"] == after["release_sha256"]
    print(f"after / before: wall {after['wall_s'] / before['wall_s']:.2f}x, CPU {after['cpu_s'] / before['cpu_s']:.2f}x; "
          f"the same release: {same} ({before['release_sha256']}, {after['release_sha256']}; a commit between the "
          f"two runs changes it)", flush=True)
    return runs


if __name__ == "__main__":
    main()
