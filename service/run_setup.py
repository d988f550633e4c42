"""What a command runs against: a Prefect API and an execution session, found or started.

Order of precedence: PREFECT_API_URL and --dask-address / XMDATA_DASK_ADDRESS as given; else the
xmdata service, started on first use (XMDATA_SERVICE=off: this command starts its own Prefect
server and, only if a stage is big enough, its own LocalCluster, and stops both at the end).
`--workers N` asks for a LocalCluster of N workers for this command alone.
"""
from __future__ import annotations

import contextlib
import functools
import os
import threading

from xmdata.schemas.contract import ContractError

from xmdata.runtime import settings
from xmdata.runtime.cluster_spec import JOBS_FOLDER
from xmdata.runtime.owner_only import external_target
from xmdata.runtime.prefect_api import prefect_api
from xmdata.runtime.session import execution_session, resolve_executor

from .service import paths, prefect_auth, running_service, service_target, touch_used
from .service_start import ensure_service

HEARTBEAT_S = 60.0  # a command running longer than the idle time keeps the service up


@contextlib.contextmanager
def run_environment(executor: str | None = None, dask_address: str | None = None,
                    workers: int | None = None, log_dir: str | None = None, quiet: bool = False,
                    cluster=None, tls: tuple[str | None, str | None, str | None] = (None, None, None),
                    dashboard: bool = False):
    """`tls`: (CA, certificate, key) files for a tls:// `dask_address`; `dashboard`: a cluster
    started for this command serves its dashboard on 127.0.0.1."""
    executor, address, target = _checked(executor, dask_address, tls)
    service = None
    named = settings.PREFECT_API_URL.get()
    if settings.SERVICE.get():
        service = running_service() if named else ensure_service(quiet=quiet, for_this_command=True)
    # The service's cluster may still be starting: its address is waited for only by a stage that uses it.
    warm = (functools.partial(service_target, service)
            if service and not workers and not address and not cluster else None)
    url = named or (service and service["prefect_api_url"])
    auth = prefect_auth(service) if service and url == service["prefect_api_url"] else None  # else the env's
    log = os.path.join(log_dir, "prefect-server.log") if log_dir and not url else None
    with prefect_api(log_path=log, url=url, auth=auth), \
            execution_session(executor, target, workers, warm, cluster, dashboard,
                              service_log=paths()["log"] if warm else None,
                              jobs_folder=log_dir and os.path.join(log_dir, JOBS_FOLDER)), \
            _keep_alive(service is not None):
        yield


def warm_cluster() -> dict:
    """For a flow run outside any command (a deployment run; runtime/session.py finds this by its entry
    point): the running service's cluster, waited for only by a stage that uses it, and its log."""
    if not (service := running_service()):
        return {}
    return {"service_address": functools.partial(service_target, service), "service_log": paths()["log"]}


def _checked(executor: str | None, dask_address: str | None, tls: tuple) -> tuple:
    """What stops a command before any start: a bad XMDATA_EXECUTOR, bad TLS flags."""
    executor = resolve_executor(executor)
    address = dask_address or settings.DASK_ADDRESS.get()
    target = external_target(address, *tls) if address else None
    if any(tls) and not address:
        raise ContractError("--tls-ca-file, --tls-cert and --tls-key are for a tls:// --dask-address")
    return executor, address, target


def start_service_early(executor: str | None = None, dask_address: str | None = None,
                        tls: tuple = (None, None, None), quiet: bool = False) -> None:
    """For a command with nothing of the user's left to check (the demo, once its --out is): the
    service that `run_environment` will ask for starts in a thread while the command imports its
    flows (~4 CPU-s), instead of after. `run_environment`'s own `ensure_service` then finds it up,
    or waits on the service lock for this start; a failure here is left to that call to meet and
    report (nothing is printed from the thread but the service's start line)."""
    try:
        _checked(executor, dask_address, tls)
    except ContractError:
        return  # the command refuses it itself, before any start
    if not settings.SERVICE.get() or settings.PREFECT_API_URL.get():
        return

    def start() -> None:
        with contextlib.suppress(Exception):
            ensure_service(quiet=quiet, for_this_command=True)

    threading.Thread(target=start, name="xmdata-service-start", daemon=True).start()


@contextlib.contextmanager
def _keep_alive(enabled: bool):
    if not enabled:
        yield
        return
    stop = threading.Event()

    def beat():
        while not stop.wait(HEARTBEAT_S):
            touch_used()

    thread = threading.Thread(target=beat, name="xmdata-service-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        touch_used()
