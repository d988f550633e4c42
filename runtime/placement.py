"""Which workers a stage's shards may run on: stages whose model runs on CUDA on GPU workers, the
rest off them.

A worker advertises a GPU with the Dask resource `GPU=1` (`xmdata worker ADDRESS --gpu`, or
`dask worker ADDRESS --resources GPU=1`; the LocalCluster gives one such worker per visible GPU).
Whether a stage needs one is decided by its model's device, not by what kind of stage it is
(`needs_gpu`): translation, QE or scoring on `cuda` is submitted with `resources={"GPU": 1}` — but
only when some worker has the resource: a cluster without GPU workers never waits for a resource
nobody has. The same stages on `cpu`, and CPU stages (language ID, geocoding), are kept on the
workers without a GPU when there are both kinds, so they never hold or wait for a GPU worker's slot.
"""
from __future__ import annotations

import shutil
import subprocess

from . import settings

GPU = "GPU"


def needs_gpu(device: str | None) -> bool:
    """The rule, in one place: a stage needs a GPU worker exactly when its model runs on CUDA
    (`cuda`, `cuda:1`); a model on the CPU never waits for a GPU, whatever kind of stage it is in."""
    return str(device or "cpu").startswith("cuda")


def placement(client, gpu: bool) -> dict:
    """Keyword arguments for `client.submit` of work that needs a GPU worker or not (a stage's shards:
    `Stage.gpu`; a training run: `needs_gpu` of its device), decided at submit time."""
    workers = client.scheduler_info(n_workers=-1)["workers"]
    with_gpu = [address for address, info in workers.items() if (info.get("resources") or {}).get(GPU)]
    if not with_gpu:
        return {}  # nobody has the resource: every stage runs where it can, GPU stages on CPU
    if gpu:
        return {"resources": {GPU: 1}}
    cpu = [address for address in workers if address not in with_gpu]
    # A preference, not a hard restriction: a worker restarted after a killed shard, or retired by
    # adapt, comes back at a new address, and tasks bound to the old ones would wait forever.
    return {"workers": cpu, "allow_other_workers": True} if cpu else {}


def gpu_ids() -> list[str]:
    """The GPUs this machine shows, without importing torch: XMDATA_GPU_WORKERS=N (N workers that
    advertise GPU=1, real GPUs or not: how the CPU tests check placement), else CUDA_VISIBLE_DEVICES,
    else `nvidia-smi -L`; none without a driver."""
    if settings.GPU_WORKERS.get() is not None:
        return [str(i) for i in range(settings.GPU_WORKERS.get())]
    visible = settings.CUDA_VISIBLE_DEVICES.raw()  # "": no GPU
    if visible is not None:
        return [d.strip() for d in visible.split(",") if d.strip()]
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        listed = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=10).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, line in enumerate(l for l in listed.splitlines() if l.startswith("GPU "))]


def add_gpu_workers(cluster, devices: list[str]) -> None:
    """One more worker on a LocalCluster per GPU, pinned to it (CUDA_VISIBLE_DEVICES, as dask-cuda's
    LocalCUDACluster pins them) and advertising GPU=1; its CPU workers stay as they are. Added to its
    spec: they start when the caller applies it (cluster.apply_worker_spec)."""
    from distributed import Nanny

    options = cluster.new_spec["options"]
    for index, device in enumerate(devices):
        env = {**options.get("env", {}), settings.CUDA_VISIBLE_DEVICES.name: device}
        cluster.worker_spec[f"gpu-{index}"] = {"cls": Nanny, "options": {
            **options, "env": env, "resources": {GPU: 1}, "name": f"gpu-{index}"}}
