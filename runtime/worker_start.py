"""How the worker processes of a cluster xmdata starts come to life: forked from a forkserver that has
already imported what they will import, or each a fresh python (spawn, XMDATA_WORKER_FORKSERVER=off).

A fresh worker pays its libraries' imports before its first shard: ~1 CPU-s for Dask and pyarrow,
6–8 CPU-s more for a model's (torch, transformers: docs/explanation/light-models.md). A worker
forked from a process that imported them pays a few hundredths of that. Which imports the
forkserver makes is decided where the cost falls (`start_local_cluster(..., models=...)`):
- every cluster: Dask and the stage libraries (LIGHT), once instead of once per worker;
- the service's long-lived cluster: the model backends' imports too (registry.BACKEND_IMPORTS),
  ~8 CPU-s once per start or return from idle, so every worker it starts, restarts or brings back
  loads its model, not torch. A run's own short cluster does not: a run of fastText-only stages
  would pay torch for nothing.

One forkserver per process (Python's `multiprocessing` keeps one), started by the first worker,
after Dask's nanny has set in this process the variables read at a process's start
(PYTHONHASHSEED, MALLOC_TRIM_THRESHOLD_): its workers have them as spawned ones do. A cluster
started when none of its workers is left gets a new one if the imports asked for or this process's
environment have changed (a forked worker has the forkserver's environment, where a spawned one has
this process's now). The service stops it with its retired workers (`stop_forkserver`); the first
worker it brings back starts it again. It exits when this process does (its pipe closes). It never
touches CUDA (importing torch does not): each GPU worker starts CUDA itself, on its own device.
torch's threads are fixed at torch's import, in the forkserver: `dask_setup` sets a worker's own
share (OMP_NUM_THREADS, from its nanny) once the worker's environment is in place.
"""
from __future__ import annotations

import sys

from . import settings

METHOD = "distributed.worker.multiprocessing-method"
# Non-daemonic workers, so that a worker may start processes of its own: the scoring stage's image
# decoders (tasks/build/decoders.py), which exit with it. Dask's default (True) forbids it children.
DAEMON = "distributed.worker.daemon"
# What any worker imports to run a shard: Dask's modules (close to the list distributed.utils.get_mp_context
# would build, which it builds by importing each package in this process: not used) and the stage libraries. An import that fails is skipped by the forkserver, as by Dask. Not polars: it starts
# threads at import and is not fork-safe (its docs); a worker imports it after the fork.
LIGHT = ("distributed", "dask", "msgpack", "cloudpickle", "tornado", "toolz", "numpy", "pandas", "lz4",
         "pyarrow.parquet", "pyarrow.dataset", "xmdata.runtime.dask_executor", "xmdata.runtime.worker_start")


def method() -> str:
    return "forkserver" if settings.WORKER_FORKSERVER.get() else "spawn"


def prepare(models: bool) -> dict:
    """Before a LocalCluster starts its workers: how they start, set for this process (a nanny reads it
    each time it starts a worker, at a restart or when the service brings its workers back); returns
    the `preload` and `preload_argv` its nannies take: Dask's configured ones, then `dask_setup` below.
    Its workers are not daemonic (DAEMON)."""
    import dask

    chosen = method()
    dask.config.set({METHOD: chosen, DAEMON: False})
    if chosen == "forkserver":
        import distributed.utils

        wanted = list(preload(models))
        if not _in_step(wanted):
            stop_forkserver()
        # Dask's context first: its first call sets Dask's own list, once per process (importing each
        # package of it here: pandas, ~0.45 s); ours then replaces it, before the forkserver starts.
        distributed.utils.get_mp_context().set_forkserver_preload(wanted)
    return worker_preload()


def start_early(models: bool) -> None:
    """Start the forkserver now, before the cluster that will use it: the service calls this before
    its Prefect server starts, so the preload (~8 CPU-s with the model imports) runs on the other
    core while Prefect starts, not after it, ahead of the first worker. The variables a nanny sets in
    this process before it starts a worker (Dask's `distributed.nanny.pre-spawn-environ`, and the
    hash seed it fixes) are set first, as the nanny would: the forkserver, and so every worker, has
    them, and the cluster's own start then finds it in step (`_in_step`)."""
    if method() != "forkserver":
        return
    import multiprocessing.forkserver

    settings.become_environment(settings.child_env(**nanny_environment()))
    prepare(models)
    multiprocessing.forkserver.ensure_running()


def nanny_environment() -> dict[str, str]:
    """What a Dask nanny sets in its own process before it starts a worker (its `pre_spawn_env`):
    Dask's `distributed.nanny.pre-spawn-environ` config, a variable this process has keeping its value
    (None unsets), and the hash seed Nanny.__init__ fixes where that leaves it unset or 0. Dask's rule,
    written here (its function for it is private); tests/runtime/test_worker_start.py compares it with
    a Nanny's own."""
    import dask
    import distributed  # noqa: F401 — Dask's distributed.* config defaults are loaded at its import

    env = settings.as_set_here(dask.config.get("distributed.nanny.pre-spawn-environ"))
    if env.get("PYTHONHASHSEED") in (None, "0"):
        env["PYTHONHASHSEED"] = "6640"
    return env


def worker_preload() -> dict:
    """Nanny keywords: the preloads Dask's config names (a user's), ours after them."""
    import dask

    configured = dask.config.get("distributed.worker.preload") or []
    argv = dask.config.get("distributed.worker.preload-argv") or []
    configured = [configured] if isinstance(configured, str) else list(configured)
    if argv and not isinstance(argv[0], str):  # one list per preload: ours takes none
        argv = [*argv, []]
    return {"preload": [*configured, __name__], "preload_argv": argv}


def _in_step(wanted: list[str]) -> bool:
    """Whether the running forkserver (if any) may serve this cluster: it has the imports asked for
    and this process's environment as it is now (a spawned worker inherits that; a forked one the
    forkserver's, read by libraries at their import too), or it still has workers, which stopping
    it would kill."""
    import psutil

    try:
        server = forkserver_of()
        if server is None or server.children():
            return True
        started = settings.process_environment(server.pid)
        command = " ".join(server.cmdline())
    except (psutil.Error, OSError):
        return False
    return started == settings.child_env() and repr(wanted) in command


# What Python's forkserver runs (`python -c 'from multiprocessing.forkserver import main; …'`): how it is
# told among this process's children, its pid being private to multiprocessing.
FORKSERVER_COMMAND = "from multiprocessing.forkserver import main"


def forkserver_of(pid: int | None = None):
    """psutil.Process of the forkserver process PID (this one) started, or None: none started, or it
    was stopped (an exited one waits, unreaped, until multiprocessing starts the next)."""
    import psutil

    for child in psutil.Process(pid).children():
        try:
            if child.status() != psutil.STATUS_ZOMBIE and FORKSERVER_COMMAND in " ".join(child.cmdline()):
                return child
        except psutil.Error:  # gone meanwhile
            continue
    return None


def stop_forkserver() -> None:
    """This process's forkserver ends, once none of its workers is left (the service's idle workers
    retired): it holds the model libraries (~0.56 GB anonymous memory), and idle means small. The next
    worker starts it again, with the same imports (multiprocessing's `ensure_running` finds it exited).
    A worker still there (its nanny's close timed out) keeps it: stopping it would leave that worker
    without its parent. SIGTERM, then wait until it has exited, left for multiprocessing to reap."""
    import os
    import signal

    import psutil

    try:
        server = forkserver_of()
        if server is None or server.children():
            return
        server.send_signal(signal.SIGTERM)  # it handles none: it exits at once
    except psutil.Error:  # gone already
        return
    os.waitid(os.P_PID, server.pid, os.WEXITED | os.WNOWAIT)  # exited; not reaped: multiprocessing does


def preload(models: bool) -> tuple[str, ...]:
    """The forkserver's imports. The model libraries go through one module that imports each on its
    own (model_imports.py): Python's forkserver skips only an ImportError, and a library that raises
    anything else (a torch/torchvision mismatch) would stop it and every worker with it."""
    return LIGHT + (("xmdata.runtime.model_imports",) if models else ())


def dask_setup(worker) -> None:  # noqa: ARG001 — Dask's preload hook, run as each worker starts
    use_thread_share()


def dask_teardown(worker) -> None:  # noqa: ARG001 — Dask's preload hook, run as each worker closes
    """The scoring stage's decoder processes (tasks/build/decoders.py) stop with their worker, waited
    for, rather than be cut off while one is still starting. Looked up, not imported: the runtime
    does not import the tasks, and a worker that never scored has none."""
    decoders = sys.modules.get("xmdata.tasks.build.decoders")
    if decoders is not None:
        decoders.shutdown_decoders()


def use_thread_share() -> None:
    """torch's threads = this worker's OMP_NUM_THREADS, as a worker that imports torch itself gets
    them; a torch imported by the forkserver kept the forkserver's."""
    threads = settings.OMP_NUM_THREADS.get()
    torch = sys.modules.get("torch")
    if torch is not None and threads and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
