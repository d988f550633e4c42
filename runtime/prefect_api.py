"""One Prefect API for the whole run: the server PREFECT_API_URL names, the xmdata service's, or
one started on 127.0.0.1 (SQLite under PREFECT_HOME) for the run's lifetime. A server started here
dies with the process that started it, even one killed with SIGKILL (Linux parent-death signal).
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


def _die_with_parent() -> None:
    """In the child, before exec: SIGTERM when the parent dies, however it dies (Linux only)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def launch_prefect_server(host: str = "127.0.0.1", port: int | None = None,
                          log_path: str | None = None) -> tuple[subprocess.Popen, str]:
    """Start `prefect server start` without waiting; returns (process, api_url)."""
    port = port or free_port()
    prefect = os.path.join(os.path.dirname(sys.executable), "prefect")
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL
    url = f"http://{host}:{port}/api"
    # The UI is told where the API is separately; without this it calls port 4200 whatever --port says.
    env = {**os.environ, "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_UI_API_URL": url}
    env.pop("PREFECT_API_URL", None)
    proc = subprocess.Popen([prefect, "server", "start", "--host", host, "--port", str(port)],
                            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
                            preexec_fn=_die_with_parent)
    return proc, url


def start_prefect_server(host: str = "127.0.0.1", port: int | None = None, log_path: str | None = None,
                         timeout: float = 120.0) -> tuple[subprocess.Popen, str]:
    """Start `prefect server start` and wait until its API answers; returns (process, api_url).
    A new Prefect home gets a copy of the empty, migrated database (runtime/prefect_db.py)."""
    from .prefect_db import keep_as_template, seed_home_database  # noqa: PLC0415

    made_by_server = seed_home_database()
    proc, url = launch_prefect_server(host, port, log_path)
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
                url: str | None = None):
    """Yield the API URL of this run: `url` or PREFECT_API_URL if set, else a server started on
    host:port for the run's lifetime and stopped after it (also on Ctrl-C)."""
    url = url or os.environ.get("PREFECT_API_URL")
    server = None
    if not url:
        server, url = start_prefect_server(host, port, log_path=log_path)
    previous = os.environ.get("PREFECT_API_URL")
    os.environ["PREFECT_API_URL"] = url  # read by Prefect here and inherited by Dask workers and runs
    try:
        from prefect.settings import PREFECT_API_URL, temporary_settings

        with temporary_settings(updates={PREFECT_API_URL: url}):
            yield url
    finally:
        if server is not None:
            flush_api_logs()
            stop_process_group(server)
        if previous is None:
            os.environ.pop("PREFECT_API_URL", None)
        else:
            os.environ["PREFECT_API_URL"] = previous


def flush_api_logs() -> None:
    """Send buffered run logs while the server still listens (else: 'Error logging to API')."""
    with contextlib.suppress(Exception):
        from prefect.logging.handlers import APILogHandler

        APILogHandler().flush()
