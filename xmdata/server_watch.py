"""A run whose Prefect server goes away stops in one line, within XMDATA_PREFECT_LOST_SECONDS.

Prefect's client retries each call with exponential backoff (2, 4, 8, 16, 32 s), and its flow and task
engines report the failure with more calls: left alone, a lost server meant minutes of tracebacks
(`httpx.ConnectError`) before the command ended. A thread asks the server's /api/health (which
answers without the password) every POLL_S; once it has not answered for the setting's seconds, the
command says so and ends at once (process_end.exit_now), as a command killed with SIGKILL ends:
what is finished is on disk whole (atomic writes, completion records), a write in flight leaves a temp
file the next run sweeps, and workers and a server this command started die with it.
"""
from __future__ import annotations

import contextlib
import logging
import sys
import threading
import time
from typing import Iterator

from xmdata.exit_codes import SERVER_LOST
from xmdata.runtime import settings

POLL_S = 1.0


def lost_line(url: str, silent_s: float, out: str | None) -> str:
    from xmdata.faults import kept

    return (f"xmdata: error: the Prefect server {url} has not answered for {silent_s:.0f} s: the build stopped; "
            f"{kept(out)} (the service's server is started anew by the next command; one you named must be "
            f"started again)")


class _ServerGoneNoise(logging.Filter):
    """Prefect's events client, which streams a run's events over a websocket, warns of each failed
    connection and logs each event it drops: on a server that is gone, a screenful before the one line
    above. Dask's client says it could not reconnect to a lost scheduler (or that its
    reconnection was cancelled as the command closed it), which the command says too. Dropped from the console (not with -v); a refused websocket of a server that answers stays."""

    def filter(self, record: logging.LogRecord) -> bool:
        message = record.getMessage()
        refused = "Connect call failed" in message or "Connection refused" in message
        return not ((record.name.startswith("prefect.events") and refused)
                    or "Service 'EventsWorker' failed to process item" in message
                    or (record.name == "distributed.client" and ("Failed to reconnect to scheduler" in message
                                                                  or _lost_connection(record))))


def _lost_connection(record: logging.LogRecord) -> bool:
    """Dask's client closed while it reconnects to a lost scheduler: its reconnection, cancelled."""
    return bool(record.exc_info) and type(record.exc_info[1]).__name__ in ("CancelledError", "CommClosedError")


SERVER_GONE_NOISE = _ServerGoneNoise()


@contextlib.contextmanager
def watching_prefect_server(out: str | None) -> Iterator[None]:
    """Inside the run's Prefect settings (run_setup.run_environment): the server they name, watched."""
    from prefect.settings import PREFECT_API_URL

    from xmdata.runtime.prefect_api import healthy
    from xmdata.runtime.process_end import PROCESS_ENDS

    url, limit = PREFECT_API_URL.value(), settings.PREFECT_LOST_SECONDS.get()
    if not url or not limit:
        yield
        return
    done = threading.Event()

    def watch() -> None:
        answered = time.monotonic()
        while not done.wait(POLL_S):
            if healthy(url):
                answered = time.monotonic()
            elif time.monotonic() - answered >= limit and not done.is_set():
                print(lost_line(url, time.monotonic() - answered, out), file=sys.stderr, flush=True)
                PROCESS_ENDS.exit_now(SERVER_LOST)

    thread = threading.Thread(target=watch, daemon=True, name="xmdata-prefect-watch")
    thread.start()
    try:
        yield
    finally:
        done.set()
