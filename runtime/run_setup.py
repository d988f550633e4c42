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

from .prefect_api import prefect_api
from .service import SERVICE_ENV, cluster_address, ensure_service, running_service, touch_used
from .session import DASK_ADDRESS_ENV, execution_session, resolve_executor

HEARTBEAT_S = 60.0  # a command running longer than the idle time keeps the service up


@contextlib.contextmanager
def run_environment(executor: str | None = None, dask_address: str | None = None,
                    workers: int | None = None, log_dir: str | None = None, quiet: bool = False,
                    cluster=None):
    executor = resolve_executor(executor)  # a bad XMDATA_EXECUTOR stops here, before any start
    service = None
    if os.environ.get(SERVICE_ENV) != "off":
        service = running_service() if os.environ.get("PREFECT_API_URL") else ensure_service(quiet=quiet)
    address = dask_address or os.environ.get(DASK_ADDRESS_ENV)
    # The service's cluster may still be starting: its address is waited for only by a stage that uses it.
    warm = (functools.partial(cluster_address, service["pid"])
            if service and not workers and not address and not cluster else None)
    url = os.environ.get("PREFECT_API_URL") or (service and service["prefect_api_url"])
    log = os.path.join(log_dir, "prefect-server.log") if log_dir and not url else None
    with prefect_api(log_path=log, url=url), execution_session(executor, address, workers, warm, cluster), \
            _keep_alive(service is not None):
        yield


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
