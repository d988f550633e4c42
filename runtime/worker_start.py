"""How the worker processes of a cluster xmdata starts come to life: each a fresh Python (Dask's
`spawn`), not daemonic, so that a worker may start processes of its own (the image readers' decoders,
tasks/build/decoders.py, which exit with it); xmdata's start hooks run after any a user configured.

There was a forkserver here: workers forked from a process that had imported Dask, pyarrow and, for
the service's cluster, the model libraries. Measured with and without in one run (`python -m bench
plumbing`; docs/explanation/architecture.md, "What each plumbing piece earns"), it saved 3.5 s of a
20.5-s first demo and made a command sent to the warm service after its idle workers were retired
wait 7.5 s instead of 2.5 s (the return paid the model libraries' preload before the first worker):
under the bar (0.5 s on a warm command, 5 s on the first demo), so it went, and with it the CPython
behaviour it stood on (the forkserver found among a process's children by its command line). A
worker now pays its own imports (~1.5 CPU-s, 6-8 more for a model's: docs/explanation/light-models.md).
"""
from __future__ import annotations

import sys

from . import settings

# Non-daemonic workers, so that a worker may start processes of its own: the image readers' decoders
# (tasks/build/decoders.py), which exit with it. Dask's default (True) forbids it children.
DAEMON = "distributed.worker.daemon"


def prepare() -> dict:
    """Before a LocalCluster starts its workers: they are not daemonic (DAEMON), set for this process (a
    nanny reads it each time it starts a worker, at a restart or when the service brings its workers
    back); returns the `preload` and `preload_argv` its nannies take: Dask's configured ones, then
    `dask_setup` below."""
    import dask

    dask.config.set({DAEMON: False})
    return worker_preload()


def worker_preload() -> dict:
    """Nanny keywords: the preloads Dask's config names (a user's), ours after them."""
    import dask

    configured = dask.config.get("distributed.worker.preload") or []
    argv = dask.config.get("distributed.worker.preload-argv") or []
    configured = [configured] if isinstance(configured, str) else list(configured)
    if argv and not isinstance(argv[0], str):  # one list per preload: ours takes none
        argv = [*argv, []]
    return {"preload": [*configured, __name__], "preload_argv": argv}


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
    """torch's threads = this worker's OMP_NUM_THREADS (its share of the cores, from its nanny), also
    where torch was imported before the variable was read (a user's preload)."""
    threads = settings.OMP_NUM_THREADS.get()
    torch = sys.modules.get("torch")
    if torch is not None and threads and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)
