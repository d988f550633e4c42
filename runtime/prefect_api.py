"""One Prefect API for the whole run: the server PREFECT_API_URL names, the xmdata service's, or
one started on 127.0.0.1 (SQLite under PREFECT_HOME) for the run's lifetime. A server started here
dies with the process that started it, even one killed with SIGKILL (Linux parent-death signal).

A server xmdata starts asks for a password (Prefect's `server.api.auth_string`, owner_only.py) and
writes only private files (umask 077: its database and logs 0600); /api/health alone answers
without it. The run's processes get it as PREFECT_API_AUTH_STRING.
"""
from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request

from . import settings
from .owner_only import new_auth_string, open_private

AUTH_ENV = settings.PREFECT_API_AUTH_STRING.name  # Prefect's own client setting: every Prefect client reads it
SERVER_AUTH_ENV = "PREFECT_SERVER_API_AUTH_STRING"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def healthy(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def _private_child() -> None:
    """In the server's process, before exec: private files only, and it dies with its parent."""
    os.umask(0o077)
    _die_with_parent()


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies, however it dies (Linux only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def launch_prefect_server(host: str = "127.0.0.1", port: int | None = None, log_path: str | None = None,
                          auth: str | None = None) -> tuple[subprocess.Popen, str]:
    """Start `prefect server start` without waiting; returns (process, api_url). `auth`: the
    password its API asks for (`user:password`)."""
    port = port or free_port()
    prefect = os.path.join(os.path.dirname(sys.executable), "prefect")
    log = open_private(log_path, "ab") if log_path else subprocess.DEVNULL
    url = f"http://{host}:{port}/api"
    # The UI is told where the API is separately; without this it calls port 4200 whatever --port says.
    env = settings.child_env(drop=(settings.PREFECT_API_URL.name,), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                             PREFECT_UI_API_URL=url, **({SERVER_AUTH_ENV: auth} if auth else {}))
    proc = subprocess.Popen([prefect, "server", "start", "--host", host, "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                            preexec_fn=_private_child)
    return proc, url


def start_prefect_server(host: str = "127.0.0.1", port: int | None = None, log_path: str | None = None,
                         timeout: float = 120.0, auth: str | None = None) -> tuple[subprocess.Popen, str]:
    """Start `prefect server start` and wait until its API answers; returns (process, api_url).
    A new Prefect home gets a copy of the empty, migrated database (runtime/prefect_db.py)."""
    from .prefect_db import keep_as_template, make_home_private, seed_home_database  # noqa: PLC0415

    made_by_server = seed_home_database()
    make_home_private()
    proc, url = launch_prefect_server(host, port, log_path, auth)
    wait_until_healthy(proc, url, log_path, timeout)
    if made_by_server:  # before this process publishes the address: nothing but the schema in it
        try:
            keep_as_template(made_by_server)
        except BaseException:  # Ctrl-C here: no server left behind
            stop_process_group(proc)
            raise
    return proc, url


def wait_until_healthy(proc: subprocess.Popen, url: str, log_path: str | None = None,
                       timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    try:
        while not healthy(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"Prefect server did not start on {url}" +
                                   (f"; see {log_path}" if log_path else ""))
            time.sleep(0.3)
    except BaseException:  # a failed start, or Ctrl-C / SIGTERM while waiting: leave no server behind
        stop_process_group(proc)
        raise


def stop_process_group(proc: subprocess.Popen, grace: float = 10.0) -> None:
    if proc.poll() is not None:
        return
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGTERM)
    try:
        proc.wait(grace)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()


@contextlib.contextmanager
def prefect_api(log_path: str | None = None, host: str = "127.0.0.1", port: int | None = None,
                url: str | None = None, auth: str | None = None, on_start=None):
    """Yield the API URL of this run: `url` (with its password `auth`, else PREFECT_API_AUTH_STRING's)
    or PREFECT_API_URL if set, else a server started on host:port with a new password for the run's
    lifetime and stopped after it (also on Ctrl-C). `on_start(auth)`: told that password."""
    url = url or settings.PREFECT_API_URL.get()
    server = None
    if not url:
        auth = new_auth_string()
        if on_start:
            on_start(auth)
        server, url = start_prefect_server(host, port, log_path=log_path, auth=auth)
    auth = auth or settings.PREFECT_API_AUTH_STRING.get()
    try:
        from prefect.settings import PREFECT_API_AUTH_STRING, PREFECT_API_URL, temporary_settings

        updates = {PREFECT_API_URL: url, **({PREFECT_API_AUTH_STRING: auth} if auth else {}), **_no_heartbeat()}
        # In the environment too: inherited by the Dask workers and runs this process starts.
        with settings.environ_for_libraries({settings.PREFECT_API_URL.name: url, AUTH_ENV: auth}), \
                temporary_settings(updates=updates):
            yield url
    finally:
        if server is not None:
            flush_api_logs()
            stop_process_group(server)


def _no_heartbeat() -> dict:
    """Prefect's flow-run heartbeat off, unless the user set its frequency. Its thread sleeps a
    second at a time and the run's end joins it: every flow run ended 0-1 s (0.5 s on average) after
    its work, for heartbeats only an automation of the user's reads (Prefect's "detect zombie
    flows"; a server xmdata starts has none)."""
    from prefect.settings import PREFECT_FLOWS_HEARTBEAT_FREQUENCY, get_current_settings

    if "heartbeat_frequency" in get_current_settings().flows.model_fields_set:
        return {}
    return {PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}


def flush_api_logs() -> None:
    """Send buffered run logs while the server still listens (else: 'Error logging to API')."""
    with contextlib.suppress(Exception):
        from prefect.logging.handlers import APILogHandler

        APILogHandler().flush()
