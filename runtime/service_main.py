"""The service process (`python -m xmdata.runtime.service_main`, started by `ensure_service`).

It owns a Prefect server (a child that dies with it) and a LocalCluster (scheduler in this process,
worker processes that exit when it goes). It writes the state file once Prefect answers, and again
with the scheduler's address once the cluster is up (`service.cluster_address` waits for it). On SIGTERM
or after the idle time closes the workers, then the scheduler, then the server, and removes the
state file.
"""
from __future__ import annotations

import argparse
import datetime
import os
import shutil
import signal
import time

from .cluster import bind_host, close_local_cluster, default_workers, start_local_cluster
from .owner_only import new_auth_string, new_dask_credentials, write_private
from .prefect_api import start_prefect_server, stop_process_group
from .service import DEFAULT_IDLE_MINUTES, IDLE_ENV, paths, write_state

CHECK_EVERY_S = 1.0  # also how fast a SIGTERM is noticed
_stop = False


def _request_stop(*_):
    global _stop
    _stop = True


def idle_for(scheduler, own_clients: int) -> float:
    """Seconds since the last command touched the service, 0 while a client or a task is active."""
    if scheduler.tasks or len(scheduler.clients) > own_clients:
        return 0.0
    try:
        return time.time() - os.stat(paths()["used"]).st_mtime
    except FileNotFoundError:
        return 0.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--fingerprint", required=True)
    parser.add_argument("--dashboard", action="store_true")
    args = parser.parse_args()
    signal.signal(signal.SIGTERM, _request_stop)
    signal.signal(signal.SIGINT, _request_stop)
    idle_minutes = float(os.environ.get(IDLE_ENV, DEFAULT_IDLE_MINUTES))
    host, workers = bind_host(), args.workers or default_workers()
    # This service's credentials, new at each start: a certificate or password from an earlier one opens nothing.
    secrets = paths()["secrets"]
    credentials = new_dask_credentials("xmdata-service").write(secrets)
    auth = new_auth_string()
    write_private(os.path.join(secrets, "prefect-auth"), auth + "\n")
    server, api_url = start_prefect_server(host, log_path=paths()["log"], timeout=240, auth=auth)
    cluster = client = None
    try:
        # Written as soon as Prefect answers: a command with nothing for the cluster (small work runs
        # in its own process) goes on at once; one that needs it waits for the address below.
        # Started after Prefect, not beside it: on 2 cores the two slowed each other.
        state = {"pid": os.getpid(), "prefect_api_url": api_url, "ui_url": api_url[:-len("/api")],
                 "dask_address": None, "workers": workers, "secrets": secrets, "dashboard": None,
                 "fingerprint": args.fingerprint, "idle_minutes": idle_minutes, "log": paths()["log"],
                 "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        write_state(state)
        cluster, client = start_local_cluster(workers, credentials=credentials, dashboard=args.dashboard)
        own_clients = len(cluster.scheduler.clients)
        if not _stop:  # asked to stop while the cluster started: no command is sent to it
            write_state({**state, "dask_address": cluster.scheduler_address, "workers": len(cluster.workers),
                         "dashboard": cluster.dashboard_link if args.dashboard else None})
        print(f"service up: {api_url}, {cluster.scheduler_address}", flush=True)
        while not _stop and idle_for(cluster.scheduler, own_clients) < idle_minutes * 60:
            time.sleep(CHECK_EVERY_S)
        print("service stopping: " + ("asked to" if _stop else f"{idle_minutes:g} min unused"), flush=True)
    finally:
        if os.path.exists(paths()["state"]):
            os.unlink(paths()["state"])
        if cluster is not None:
            close_local_cluster(cluster, client)
        stop_process_group(server)
        shutil.rmtree(secrets, ignore_errors=True)
        print("service stopped", flush=True)


if __name__ == "__main__":
    main()
