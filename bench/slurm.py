"""dask-jobqueue's SLURMCluster on a one-host SLURM (the tests' slurm-wlm + munge in a temp folder,
tests/support/slurm_cluster.py), in one run:

1. decoders a SLURM job's worker (one worker, 2 cores) gets: the class as dask-jobqueue builds it
   (before issue 69: a daemonic worker, decoding in threads, one a core of its OMP_NUM_THREADS=1) and
   as xmdata starts it (runtime/cluster_spec.start_cluster: DASK_DISTRIBUTED__WORKER__DAEMON=False
   and the worker's thread share in the job's prologue: decoding in processes, one a core);
2. seconds from a job's `scancel` to its replacement's worker joining (adapt 1:1);
3. the demo through SLURMCluster (--adapt 2:2, one core and 6 GB a job) ÷ through a LocalCluster of
   two workers (--workers 2), the same command otherwise (every stage on the cluster, its own Prefect
   server), alternated, best wall seconds of REPEATS each; and whether all have one release_sha256.
Needs root and Debian's slurm-wlm and munge (apt-get install slurm-wlm munge).

    ./run bench slurm
"""
from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import tempfile
import time

REPEATS = 2
JOB = {"cores": 1, "memory": "6GB", "walltime": "00:30:00", "processes": 1}
WIDE = {**JOB, "cores": 2}  # one worker of 2 cores: what its share gives the decoders


def decoders_here() -> tuple[bool, str]:
    """On a worker: whether it may start processes, and what the scoring stage's decoders are."""
    from xmdata.tasks.build.decoders import can_have_children, default_count, worker_decoders

    decoders = worker_decoders(None)
    return can_have_children(), f"{type(decoders).__name__}({default_count()})"


def decoders_before_and_after(folder: str) -> dict:
    import dask_jobqueue

    from xmdata.runtime.cluster_spec import ClusterOptions, start_cluster
    from xmdata.runtime.owner_only import new_dask_credentials

    os.makedirs(folder, mode=0o700, exist_ok=True)
    plain = dask_jobqueue.SLURMCluster(**WIDE, log_directory=folder, shared_temp_directory=folder,
                                       security=new_dask_credentials().security(), protocol="tls://")
    from distributed import Client

    plain.scale(1)
    with Client(plain, security=plain.security) as client:
        client.wait_for_workers(1, timeout=120)
        before = client.submit(decoders_here, pure=False).result()
    plain.close()
    del plain, client
    gc.collect()  # its TLS files (dask-jobqueue's temporary files) removed now, not at exit after their folder
    cluster, client = start_cluster(ClusterOptions(cluster_class="dask_jobqueue.SLURMCluster", cluster_kwargs=WIDE,
                                                   adapt_minimum=1, adapt_maximum=1), jobs_folder=folder)
    try:
        after = client.submit(decoders_here, pure=False).result()
        job = next(iter(cluster.workers.values())).job_id
        started = time.monotonic()
        subprocess.run(["scancel", job], check=True)
        while not (client.scheduler_info()["workers"] and next(iter(cluster.workers.values())).job_id != job):
            time.sleep(0.1)
        client.wait_for_workers(1, timeout=120)
        replaced = time.monotonic() - started
    finally:
        client.close()
        cluster.close()
    return {"before": before, "after": after, "cancel_to_replacement_s": replaced}


def demo_seconds(out: str, *flags: str) -> float:
    """One demo, every stage on the cluster, every model call made (--memo off: a run after the first
    would otherwise take its model results from the memo); its own Prefect server (XMDATA_SERVICE=off),
    so that neither run pays the service's start for the other."""
    started = time.perf_counter()
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "xmdata"), "demo", "--out", out, "-q",
                           "--executor", "dask", "--memo", "off", *flags], capture_output=True, text=True,
                          env={**os.environ, "XMDATA_SERVICE": "off"})
    assert done.returncode == 0, done.stderr[-3000:]
    return time.perf_counter() - started


def main() -> dict:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(__file__)), "tests"))
    from support.slurm_cluster import missing, start_slurm  # the cluster the SLURM tests use

    if missing():
        print(f"bench.slurm: {missing()}")
        return {}
    with tempfile.TemporaryDirectory(prefix="xmdata-bench-slurm-") as tmp:
        slurm = start_slurm(os.path.join(tmp, "slurm"))
        try:
            os.environ.update(slurm.env())
            figures = decoders_before_and_after(os.path.join(tmp, "jobs"))
            kwargs = ",".join(f"{k}={v}" for k, v in JOB.items())
            runs = {"local": [], "slurm": []}
            for i in range(REPEATS):  # alternated, best of each: the machine is shared
                runs["local"].append(demo_seconds(os.path.join(tmp, f"local-{i}"), "--workers", "2"))
                runs["slurm"].append(demo_seconds(os.path.join(tmp, f"slurm-{i}"), "--cluster",
                                                  "dask_jobqueue.SLURMCluster", "--cluster-kwargs", kwargs,
                                                  "--adapt", "2:2"))
            local, on_slurm = min(runs["local"]), min(runs["slurm"])
            hashes = {json.load(open(os.path.join(tmp, f"{kind}-{i}", "manifest.json")))["release_sha256"]
                      for kind in ("local", "slurm") for i in range(REPEATS)}
        finally:
            slurm.stop()
    runs = {kind: [round(t, 1) for t in times] for kind, times in runs.items()}
    figures.update(local_s=local, slurm_s=on_slurm, ratio=on_slurm / local, same_hash=len(hashes) == 1)
    print(f"decoders on a SLURM job's worker: dask-jobqueue as is {figures['before']}, "
          f"started by xmdata {figures['after']}  (may have children, decoders)")
    print(f"scancel of a job -> its replacement's worker joined: {figures['cancel_to_replacement_s']:.1f} s")
    print(f"demo, best of {REPEATS} alternated: LocalCluster (2 workers) {local:.1f} s {runs['local']}, "
          f"SLURMCluster (2 jobs) {on_slurm:.1f} s {runs['slurm']}: "
          f"SLURM / local = {on_slurm / local:.2f}; the same release_sha256: {figures['same_hash']}")
    return figures
