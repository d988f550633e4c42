"""Where a run's stages execute: chosen per stage, by size, from what is at hand.

- `--executor inprocess`: every shard in this process (tests that do not test the cluster).
- `--executor dask`, `--dask-address` or XMDATA_DASK_ADDRESS: every shard on a cluster (a `tls://`
  one with `--tls-ca-file/--tls-cert/--tls-key` or Dask's own TLS config: owner_only.external_target).
- `auto` (default): a stage whose pending rows fit under its `inline_rows` runs in this process,
  where nothing needs starting or shipping; so does any stage of at most SMALL_ROWS rows when no
  warm cluster is at hand. Everything else goes to a warm cluster — an address, or the xmdata
  service (`xmdata up`) — or, failing both, a LocalCluster (or the `--cluster` class: SLURM,
  Kubernetes…, cluster_spec.py) started for this run and closed after it.
"""
from __future__ import annotations

import atexit
import contextlib
import contextvars
import os
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable

from . import settings
from .cluster import close_local_cluster, connect, start_local_cluster

if TYPE_CHECKING:  # owner_only imports the contract (pyarrow): not for `xmdata --help`
    from .owner_only import DaskTarget

EXECUTORS = ("auto", "inprocess", "dask")
SMALL_ROWS = 2_000  # below this, starting a cluster costs more than two processes save


@dataclass
class ExecutionSession:
    executor: str = "auto"
    address: DaskTarget | str | None = None  # an existing scheduler: every stage runs there
    workers: int | None = None  # LocalCluster size when one must be started
    # The xmdata service's warm cluster, if up: its target, or a function that waits for it.
    service_address: DaskTarget | str | Callable[[], DaskTarget] | None = None
    cluster: object = None  # ClusterOptions: a cluster manager (SLURM, Kubernetes…) started when needed
    dashboard: bool = False  # a cluster started here serves its dashboard (127.0.0.1)
    service_log: str | None = None  # where the service's workers write their logs (its own log)
    jobs_folder: str | None = None  # a cluster manager's batch jobs log here (cluster_spec.JOBS_FOLDER)
    _client: object = None
    _cluster: object = None
    _lock: threading.RLock = field(default_factory=threading.RLock, repr=False)

    def __post_init__(self):
        self.executor = resolve_executor(self.executor)
        from .owner_only import DaskTarget

        if isinstance(self.address, str):  # a Python caller's address: Dask's own security config
            self.address = DaskTarget(self.address)

    @property
    def warm_address(self) -> DaskTarget | None:
        with self._lock:
            service = self.service_address
            if callable(service):  # waited for once; a failure is raised, not kept
                self.service_address = service = service()
            if isinstance(service, str):
                from .owner_only import DaskTarget

                self.service_address = service = DaskTarget(service)
            return self.address or service

    @property
    def has_warm_cluster(self) -> bool:
        """An address or the service: true before the service's cluster has finished starting."""
        return bool(self.address or self.service_address)

    @property
    def may_use_a_cluster(self) -> bool:
        """Whether a stage may run on a cluster: an address, the service, `dask`, a --cluster class.
        Only then do a build's parts run side by side (flows/release_build.py): in this process
        alone they would take turns at its shard functions anyway."""
        return self.executor == "dask" or (self.executor == "auto" and (self.has_warm_cluster or self.cluster is not None))

    def executor_for(self, stage, pending_rows: int | Callable[[], int], pending_shards: int):
        """`pending_rows` may be a function: counting rows reads every pending shard's footer (a GET
        each on a store), which only `auto` needs."""
        from .dask_executor import DaskExecutor  # pyarrow: not for `xmdata --help`
        from .executors import InProcessExecutor

        if self.executor == "inprocess" or pending_shards == 0:
            return InProcessExecutor()
        if self.executor == "auto" and not self.address:
            pending_rows = pending_rows() if callable(pending_rows) else pending_rows
            small = pending_shards == 1 or pending_rows <= stage.inline_rows or (
                pending_rows <= SMALL_ROWS and not self.has_warm_cluster)
            if small:
                return InProcessExecutor()
        return DaskExecutor(self.client(), self.worker_log())

    def client(self):
        with self._lock:  # one client, whichever thread asks first
            if self._client is None:
                self._connect()
            return self._client

    def worker_log(self) -> str:
        """Where the workers of the cluster this session is connected to write their logs."""
        from distributed import LocalCluster

        if isinstance(self._cluster, LocalCluster):  # its nannies log here, its workers inherit stderr
            return "this command's stderr"
        if self._cluster is not None:
            return f"the job logs of its {type(self._cluster).__name__}"
        if self.address or not self.service_log:
            return "the workers' own output, where they were started"
        return self.service_log  # the service's: its workers inherit its stdout and stderr

    def _connect(self) -> None:
        if self.warm_address:
            self._client = connect(self.warm_address)
        elif self.cluster is not None:
            from .cluster_spec import start_cluster

            self._cluster, self._client = start_cluster(self.cluster, self.workers, self.jobs_folder,
                                                              self.dashboard)
        else:
            self._cluster, self._client = start_local_cluster(self.workers, dashboard=self.dashboard)

    def close(self) -> None:
        manager = self.cluster is not None and self._cluster is not None
        if self._cluster is not None:
            close_local_cluster(self._cluster, self._client)
        elif self._client is not None:
            self._client.close()
        self._client = self._cluster = None
        if manager:  # a batch cluster's TLS files for its jobs (dask-jobqueue's temporary files, in the
            import gc  # jobs folder) go when it is collected: now, not at an exit that may skip its cycles

            gc.collect()


def resolve_executor(executor: str | None) -> str:
    """The flag, else XMDATA_EXECUTOR, else auto; a bad value is refused before anything starts."""
    executor = executor or settings.EXECUTOR.get()
    if executor not in EXECUTORS:  # a flag is checked by argparse; this is for the environment
        from xmdata.schemas.contract import ContractError

        raise ContractError(f"{settings.EXECUTOR.name}={executor!r}: choose from {', '.join(EXECUTORS)}")
    return executor


# A flow run outside any command (a deployment run) finds the warm cluster of the layer above that keeps
# one (the xmdata service) by this entry-point group (pyproject.toml): the runtime never imports that layer.
WARM_CLUSTER_GROUP = "xmdata.warm_cluster"


def found_warm_cluster() -> dict:
    """{"service_address": …, "service_log": …} of the first warm cluster a WARM_CLUSTER_GROUP finder
    reports, else {}."""
    from importlib.metadata import entry_points

    for finder in entry_points(group=WARM_CLUSTER_GROUP):
        if found := finder.load()():
            return found
    return {}


_current: contextvars.ContextVar[ExecutionSession | None] = contextvars.ContextVar("xmdata_session",
                                                                                   default=None)
_default: ExecutionSession | None = None


@contextlib.contextmanager
def execution_session(executor: str | None = None, address: DaskTarget | str | None = None,
                      workers: int | None = None,
                      service_address: DaskTarget | Callable[[], DaskTarget] | None = None,
                      cluster=None, dashboard: bool = False, service_log: str | None = None,
                      jobs_folder: str | None = None):
    """`service_address`, `service_log`: the caller's warm cluster (the service's: service/run_setup.py)."""
    if address is None and settings.DASK_ADDRESS.get():
        from .owner_only import external_target

        address = external_target(settings.DASK_ADDRESS.get())
    session = ExecutionSession(executor, address, workers, service_address, cluster, dashboard, service_log, jobs_folder)
    token = _current.set(session)
    try:
        yield session
    finally:
        _current.reset(token)
        session.close()


@contextlib.contextmanager
def cluster_scope(options, folder: str | None = None):
    """A flow's own cluster manager (a release config's `cluster:`, a deployment's parameter), unless
    the run already has a cluster or an address: the command line wins over the config. `folder`:
    the flow's local work folder, whose `_jobs/` gets the batch jobs' logs and TLS files unless the
    run's session names its own (a command's): a deployment run's would otherwise land in the
    worker's current folder."""
    from .cluster_spec import JOBS_FOLDER

    current = current_session()
    if options is None or current.cluster is not None or current.address:
        yield current
        return
    jobs_folder = current.jobs_folder or (folder and os.path.join(folder, JOBS_FOLDER))
    with execution_session(current.executor, workers=current.workers, cluster=options,
                           dashboard=current.dashboard, jobs_folder=jobs_folder) as session:
        yield session


def current_session() -> ExecutionSession:
    """The run's session; a flow started elsewhere (a deployment run) gets one from the environment
    and the service (found_warm_cluster), kept for the process's life."""
    global _default
    session = _current.get()
    if session is not None:
        return session
    if _default is None:
        from .owner_only import external_target

        address = settings.DASK_ADDRESS.get()
        _default = ExecutionSession(None, address and external_target(address), **found_warm_cluster())
        atexit.register(_default.close)
    return _default
