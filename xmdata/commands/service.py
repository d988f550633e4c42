"""`xmdata up`, `down`, `status`: the background service (a Prefect server and a warm Dask cluster);
`xmdata worker`: Dask workers for a scheduler of the user's own; `xmdata serve`: prefect.yaml's
deployments. Each command's work is in the runtime (or xmdata/serve.py), imported when it runs."""
from __future__ import annotations

import argparse

from xmdata.cli_command import Command
from xmdata.cli_options import add_tls_flags, positive_int
from xmdata.cli_params import port_number
from xmdata.commands.lock import add_status_arguments, status


def add_up_arguments(up: argparse.ArgumentParser) -> None:
    up.add_argument("--workers", type=positive_int, default=None, help="worker processes (default: one per core)")
    up.add_argument("--dashboard", action="store_true",
                    help="serve the Dask dashboard on 127.0.0.1 (off by default: its pages ask for no password)")


def service(args: argparse.Namespace) -> int:
    """`xmdata up` / `down` / `status`: the background Prefect server and warm Dask cluster."""
    from xmdata.service.service_status import service_command

    return service_command(args)


def add_worker_arguments(worker: argparse.ArgumentParser) -> None:
    worker.add_argument("address", help="the scheduler, tls://host:8786 (tcp:// only on a network you trust)")
    worker.add_argument("--gpu", action="store_true", help="one worker per visible GPU, each pinned to it")
    add_tls_flags(worker, "for a tls:// scheduler (default: Dask's TLS config)")


def worker(args: argparse.Namespace) -> int:
    from xmdata.runtime.worker_command import worker_command

    return worker_command(args)


def add_serve_arguments(serve: argparse.ArgumentParser) -> None:
    serve.add_argument("--host", default="127.0.0.1", help="server address (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=port_number, default=4200)
    serve.add_argument("--prefect-yaml", default=None, help="deployments file (default: the project's prefect.yaml)")
    serve.add_argument("--activate-schedules", action="store_true",
                       help="turn on the schedules prefect.yaml declares (off by default)")
    serve.add_argument("--api-url", default=None,
                       help="serve against an existing Prefect server instead of starting one (or PREFECT_API_URL)")


def serve(args: argparse.Namespace) -> int:
    from xmdata.serve import serve_deployments

    return serve_deployments(args)


GUIDE = "how-to/service.md"
UP = Command("up", "start the xmdata service in the background: a Prefect server and a warm Dask cluster on "
             "127.0.0.1 that every later command reuses", add_up_arguments, service, guide=GUIDE)
DOWN = Command("down", "stop the xmdata service: workers, scheduler and Prefect server", run=service, guide=GUIDE)
WORKER = Command("worker", "Dask worker(s) for an existing scheduler; --gpu: one per visible GPU, each advertising "
                 "the resource GPU=1 (GPU stages run there)", add_worker_arguments, worker,
                 guide="how-to/clusters.md")
STATUS = Command("status", "is the xmdata service up; its URLs, workers and loaded models (with FOLDER: who is "
                 "writing that folder)", add_status_arguments, status, guide=GUIDE)
SERVE = Command("serve", "a Prefect server on 127.0.0.1 and a process serving the deployments of prefect.yaml; "
                "Ctrl-C stops both", add_serve_arguments, serve, guide="how-to/scheduled-builds.md")
