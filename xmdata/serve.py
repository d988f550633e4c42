"""`xmdata serve`: what a local user needs to run builds from the Prefect UI — a Prefect server on
127.0.0.1 (unless one is named) and one process serving every deployment of prefect.yaml. Ctrl-C
(or SIGTERM) stops the serving process, then the server it started.

The server it starts asks for a password (owner_only.py), new each time, written 0600 beside its log
in a 0700 folder: the UI's login page takes the file's line; the flow runs it starts inherit it."""
from __future__ import annotations

import os
import signal
import sys
import tempfile

import yaml

from xmdata.runtime import settings
from xmdata.runtime.owner_only import write_private
from xmdata.runtime.prefect_api import prefect_api

ONE_RUN_AT_A_TIME = 1
PROJECT_YAML = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "prefect.yaml")


def load_deployments(path: str, activate_schedules: bool) -> list:
    """prefect.yaml's deployments as RunnerDeployments. A run's shards go where a CLI run's would
    (`runtime/session.py`): XMDATA_DASK_ADDRESS's scheduler, the xmdata service's warm cluster if it
    is up, or this process and, for big stages, a LocalCluster started for the run."""
    from prefect.flows import load_flow_from_entrypoint
    from prefect.schedules import Cron

    spec = yaml.safe_load(open(path, encoding="utf-8"))
    deployments = []
    for entry in spec.get("deployments") or []:
        flow = load_flow_from_entrypoint(entry["entrypoint"], use_placeholder_flow=False)
        schedules = [Cron(s["cron"], timezone=s.get("timezone"), active=activate_schedules or s.get("active", True))
                     for s in entry.get("schedules") or []]
        deployment = flow.to_deployment(
            name=entry["name"], description=entry.get("description"), tags=entry.get("tags"),
            parameters=entry.get("parameters") or {}, schedules=schedules or None,
            # Prefect's own limit: a run that would overlap another of its deployment waits (a deployments
            # file that says nothing gets 1 too; `concurrency_limit: null` lifts it)
            concurrency_limit=entry.get("concurrency_limit", ONE_RUN_AT_A_TIME))
        deployment.entrypoint = entry["entrypoint"]  # the module path: a file path breaks relative imports
        deployments.append(deployment)
    return deployments


def _interrupt(*_):
    raise KeyboardInterrupt


def serve_deployments(args) -> int:
    path = os.path.abspath(args.prefect_yaml or ("prefect.yaml" if os.path.exists("prefect.yaml") else PROJECT_YAML))
    named = args.api_url or settings.PREFECT_API_URL.get()
    log = password = None
    if not named:
        folder = tempfile.mkdtemp(prefix="xmdata-serve-")  # 0700
        log, password = os.path.join(folder, "prefect-server.log"), os.path.join(folder, "ui-password")
        print(f"starting a Prefect server on {args.host}:{args.port} (log: {log})…", flush=True)
    signal.signal(signal.SIGTERM, _interrupt)  # a service manager's stop is a Ctrl-C too
    try:
        with prefect_api(log_path=log, host=args.host, port=args.port, url=named,
                         on_start=lambda auth: write_private(password, auth + "\n")) as api_url:
            from prefect import serve
            from prefect.settings import PREFECT_RUNNER_POLL_FREQUENCY, temporary_settings

            deployments = load_deployments(path, args.activate_schedules)
            ui = api_url[:-len("/api")] if api_url.endswith("/api") else api_url
            login = f" (password: the line in {password})" if password else ""
            print(f"serving {len(deployments)} deployments from {path}; UI: {ui}{login} — Ctrl-C stops", flush=True)
            poll = settings.PREFECT_RUNNER_POLL_FREQUENCY.get()  # 2 s unless set, not Prefect's 10
            with temporary_settings(updates={PREFECT_RUNNER_POLL_FREQUENCY: poll}):
                serve(*deployments, print_starting_message=False)
    except KeyboardInterrupt:
        pass  # prefect_api has stopped the server it started
    finally:
        if password and os.path.exists(password):  # it opens nothing now; the log stays for reading
            os.unlink(password)
        print("stopped", file=sys.stderr, flush=True)
    return 0
