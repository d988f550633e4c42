"""`xmdata worker ADDRESS [--gpu]`: Dask workers for an existing scheduler, as the runs expect them.

Plain: one single-threaded worker (a worker holds one copy of each model and runs one shard at a
time). `--gpu`: one worker per visible GPU, each pinned to its device and advertising the Dask
resource GPU=1, so translation, QE and scoring shards go there (placement.py). The same by hand:
`CUDA_VISIBLE_DEVICES=0 dask worker ADDRESS --nthreads 1 --resources GPU=1`.

A `tls://` scheduler: `--tls-ca-file/--tls-cert/--tls-key`, or Dask's own TLS config (its CA file and
*worker* certificate and key, or one PEM file holding both; the client's keys are for clients), which
`dask worker` reads itself: without either it is refused in one line. A plain `tcp://` one off this
machine is joined with a one-line warning.
"""
from __future__ import annotations

import os
import subprocess
import sys

from xmdata.schemas.contract import ContractError

from . import settings
from .owner_only import DaskTarget, external_target
from .placement import gpu_ids

WORKER_TLS = ("ca-file", "worker.cert", "worker.key")  # what `dask worker` takes from Dask's config


def worker_target(address: str, ca: str | None, cert: str | None, key: str | None) -> DaskTarget:
    """The scheduler, checked (and a plain remote tcp:// warned about) before any worker starts."""
    if address.startswith("tls://") and not any((ca, cert, key)):
        import dask

        missing = [f"distributed.comm.tls.{k}" for k in WORKER_TLS
                   if not dask.config.get(f"distributed.comm.tls.{k}", None)]
        if missing == ["distributed.comm.tls.worker.key"] and _holds_a_key(
                dask.config.get("distributed.comm.tls.worker.cert")):
            missing = []  # one PEM file with the certificate and its key, as Dask allows
        if missing:
            raise ContractError(f"xmdata worker {address}: a tls:// scheduler needs --tls-ca-file, --tls-cert "
                                f"and --tls-key, or Dask's config {', '.join(missing)}")
        return DaskTarget(address)
    return external_target(address, ca, cert, key)


def _holds_a_key(pem: str) -> bool:
    try:
        with open(pem, encoding="utf-8", errors="replace") as f:
            return "PRIVATE KEY-----" in f.read()
    except OSError:
        return False  # named as missing; `dask worker` would say no better


def worker_command(args) -> int:
    dask = os.path.join(os.path.dirname(sys.executable), "dask")
    target = worker_target(args.address, args.tls_ca_file, args.tls_cert, args.tls_key)
    base = [dask, "worker", args.address, "--nthreads", "1", "--no-dashboard",
            *(target.credentials.worker_flags() if target.credentials else [])]
    if not args.gpu:
        return subprocess.call(base)
    devices = gpu_ids()
    if not devices:
        raise ContractError("xmdata worker --gpu: no GPU visible (nvidia-smi -L lists none, "
                            "CUDA_VISIBLE_DEVICES is empty); start a plain worker instead")
    procs = [subprocess.Popen(base + ["--resources", "GPU=1", "--name", f"{os.uname().nodename}-gpu-{d}"],
                              env=settings.child_env(**{settings.CUDA_VISIBLE_DEVICES.name: d})) for d in devices]
    try:
        return max(p.wait() for p in procs)
    finally:  # Ctrl-C: every worker goes with this command
        for p in procs:
            if p.poll() is None:
                p.terminate()
        for p in procs:
            p.wait()
