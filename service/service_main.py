"""The service process (`python -m xmdata.service.service_main`, started by `ensure_service`).

It owns a Prefect server (a child that dies with it) and a LocalCluster (scheduler in this process,
worker processes that exit when it goes). It writes the state file once Prefect answers, and again
with the scheduler's address once the cluster is up (`service.cluster_address` waits for it).
Idle means small: with no task for XMDATA_MODEL_IDLE_MINUTES it retires its workers (the state says
`retired`) and starts them again, as they were, when a command asks (SIGUSR1, `service.workers_back`)
or a task waits. On SIGTERM, after XMDATA_IDLE_MINUTES unused, or once its Prefect home or its state
folder is deleted, it closes the workers, then the scheduler, then the server, and removes the state file.
"""
from __future__ import annotations

import argparse
import datetime
import os
import select
import shutil
import signal
import time

from xmdata.runtime.cluster import (apply_worker_spec, bind_host, close_local_cluster, default_workers,
                                    start_local_cluster)
from xmdata.runtime.owner_only import new_auth_string, new_dask_credentials, write_private
from xmdata.runtime.prefect_api import start_prefect_server, stop_process_group
from .service import (CLUSTER_START_S, WAKE_SIGNAL, forget_state, idle_seconds, model_idle_seconds, paths,
                      prefect_home, stop_command_process, write_state)

CHECK_EVERY_S = 1.0  # a signal wakes the loop at once; this is for the idle clock and the folders
class Signals:
    """SIGTERM/SIGINT ask to stop, SIGUSR1 for the workers back; each wakes `_wait` at once
    (`wakeup`: the pipe the signal writes to)."""

    def __init__(self):
        self.stop = self.wanted = False
        readable, writable = os.pipe()
        os.set_blocking(writable, False)
        signal.set_wakeup_fd(writable)
        for signum in (signal.SIGTERM, signal.SIGINT, WAKE_SIGNAL):
            signal.signal(signum, self._on_signal)
        self.wakeup = readable

    def _on_signal(self, signum, _frame) -> None:
        if signum == WAKE_SIGNAL:
            self.wanted = True
        else:
            self.stop = True


def _wait(wakeup: int, seconds: float) -> None:
    if select.select([wakeup], [], [], seconds)[0]:
        os.read(wakeup, 512)


def idle_for(scheduler, own_clients: int, used: str) -> float:
    """Seconds since the last command touched the service, 0 while a client or a task is active."""
    if scheduler.tasks or len(scheduler.clients) > own_clients:
        return 0.0
    try:
        return time.time() - os.stat(used).st_mtime
    except FileNotFoundError:
        return 0.0


def folder_ids(folders: list[str]) -> dict[str, tuple[int, int]]:
    return {folder: (os.stat(folder).st_dev, os.stat(folder).st_ino) for folder in folders}


def gone(ids: dict[str, tuple[int, int]]) -> str | None:
    """The first folder deleted (or deleted and made again) since the start: a temporary home."""
    for folder, identity in ids.items():
        try:
            if (os.stat(folder).st_dev, os.stat(folder).st_ino) != identity:
                return folder
        except FileNotFoundError:
            return folder
    return None


class Workers:
    """The cluster's workers, retired when idle and started again as they were (GPU ones included)."""

    def __init__(self, cluster, client):
        self.cluster, self.client, self.retired = cluster, client, None

    def retire(self) -> None:
        self.retired = dict(self.cluster.worker_spec)
        self.cluster.worker_spec.clear()
        apply_worker_spec(self.cluster)  # retire_workers, then each nanny closes
        from xmdata.models.model_cache import free_memory  # the scheduler's share of their memory

        free_memory()

    def restore(self) -> None:
        self.cluster.worker_spec.update(self.retired)
        apply_worker_spec(self.cluster)
        self.client.wait_for_workers(len(self.retired), timeout=CLUSTER_START_S)  # and the scheduler has them
        self.retired = None


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--workers", type=int, default=None)
    parser.add_argument("--fingerprint", required=True)
    parser.add_argument("--dashboard", action="store_true")
    args = parser.parse_args()
    signals = Signals()
    idle_s, model_idle_s, p = idle_seconds(), model_idle_seconds(), paths()  # paths() once: it makes the folder
    host, workers = bind_host(), args.workers or default_workers()
    # This service's credentials, new at each start: a certificate or password from an earlier one opens nothing.
    credentials = new_dask_credentials("xmdata-service").write(p["secrets"])
    auth = new_auth_string()
    write_private(os.path.join(p["secrets"], "prefect-auth"), auth + "\n")
    server, api_url = start_prefect_server(host, log_path=p["log"], timeout=240, auth=auth)
    cluster = client = None
    try:
        homes = folder_ids([prefect_home(), os.path.dirname(p["state"])])  # the server made its home
        # Written as soon as Prefect answers: a command with nothing for the cluster (small work runs
        # in its own process) goes on at once; one that needs it waits for the address below.
        # Started after Prefect, not beside it: on 2 cores the two slowed each other.
        state = {"pid": os.getpid(), "prefect_pid": server.pid, "prefect_api_url": api_url,
                 "ui_url": api_url[:-len("/api")], "dask_address": None, "workers": workers, "retired": False,
                 "secrets": p["secrets"], "dashboard": None, "fingerprint": args.fingerprint,
                 "idle_minutes": idle_s / 60, "model_idle_minutes": model_idle_s / 60, "log": p["log"],
                 "started": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")}
        write_state(state)
        cluster, client = start_local_cluster(workers, credentials=credentials, dashboard=args.dashboard)
        own_clients = len(cluster.scheduler.clients)
        if not signals.stop:  # asked to stop while the cluster started: no command is sent to it
            state.update(dask_address=cluster.scheduler_address, workers=len(cluster.workers),
                         dashboard=cluster.dashboard_link if args.dashboard else None)
            write_state(state)
        print(f"service up: {api_url}, {cluster.scheduler_address}", flush=True)
        pool, why = Workers(cluster, client), "asked to"
        while not signals.stop:
            idle = idle_for(cluster.scheduler, own_clients, p["used"])
            if folder := gone(homes):
                why = f"{folder} was deleted"
                break
            if server.poll() is not None:  # the next command finds no service and starts a new one
                why = f"its Prefect server exited (status {server.returncode})"
                break
            if idle >= idle_s:
                why = f"{idle_s / 60:g} min unused"
                break
            if pool.retired is None:
                signals.wanted = False  # a late call for workers that are there
                if idle >= model_idle_s and cluster.workers:
                    write_state({**state, "retired": True})  # first: a command from now on asks for them
                    pool.retire()
                    print(f"workers retired: {model_idle_s / 60:g} min unused", flush=True)
            elif signals.wanted or cluster.scheduler.tasks:  # asked for, or a task waits for them
                started = time.monotonic()
                pool.restore()
                signals.wanted = False
                write_state(state)
                print(f"workers back in {time.monotonic() - started:.1f} s", flush=True)
            _wait(signals.wakeup, CHECK_EVERY_S)
        print(f"service stopping: {why}", flush=True)
    finally:
        forget_state(os.getpid())  # this service's state only: a newer service's is that one's
        if cluster is not None:
            close_local_cluster(cluster, client)
        stop_process_group(server)
        stop_command_process(p["secrets"])
        shutil.rmtree(p["secrets"], ignore_errors=True)
        print("service stopped", flush=True)


if __name__ == "__main__":
    main()
