"""The `xmdata` entry point. With the service up, a command runs in a fork of the service's warm
command process (service/command_server.py), which has Prefect, Dask, polars and the flows imported:
this process imports nothing heavy, hands over its arguments, folder, environment and stdin/stdout/
stderr, forwards its signals and exits with the command's status.

It runs the command in this process instead ("cold": `xmdata.cli.main`, as before) when there is no
command process of this code for this environment and Prefect home, when a variable read as Python or
the libraries load differs from that process's (COLD_WHEN_DIFFERENT, less the few that change
nothing: WARM_WHEN_DIFFERENT), for `-v` (its logging is configured as the libraries load), for
what manages or is the service (`up`, `down`, `status`, `worker`, `serve`), and with XMDATA_SERVICE=off.
Warm or cold, the command writes, prints and returns the same; `-v` says which, and why. The rules
are declared once, in service/warm_cold.py (`decide`).
`--help` goes to the command process too when it is up (~0.1 s, not 0.35).
"""
from __future__ import annotations

import json
import os
import signal
import socket
import sys

from xmdata.exit_codes import FAILED
from xmdata.runtime import settings
from xmdata.runtime.code_version import code_fingerprint
from xmdata.service.service_files import light_prefect_home, service_base
from xmdata.service.warm_cold import HERE, VERBOSE, decide

FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT)


def command_process_info() -> dict | None:
    """What this service's command process publishes (its socket, its import-time variables) when it
    runs this code, else None."""
    home = light_prefect_home()
    if home is None:
        return None
    from xmdata.service.service_files import INFO_NAME

    try:
        with open(os.path.join(service_base(home) + ".secrets", INFO_NAME), encoding="utf-8") as f:
            info = json.load(f)
        os.kill(info["pid"], 0)
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return info if info.get("fingerprint") == code_fingerprint() else None


def command_process() -> str | None:
    """The socket of this service's command process when it runs this code, else None."""
    info = command_process_info()
    return info["socket"] if info else None


class Stopped(Exception):
    """A second signal while the command process has not yet said the command's pid: the client stops
    waiting (a command process that accepted and hangs must not make Ctrl-C useless)."""

    def __init__(self, signum: int):
        self.signum = signum


class Forwarder:
    """The client's handler of FORWARDED signals, installed before the command is sent: a signal that
    comes before the command process names the command's pid (a Ctrl-C at once, on a loaded machine)
    is kept and sent to it then, not left to Python's default (a KeyboardInterrupt traceback here,
    the command left to notice the closed connection); a second one before then stops the wait."""

    def __init__(self):
        self.child: int | None = None
        self.pending: list[int] = []
        self.previous = {signum: signal.signal(signum, self.handle) for signum in FORWARDED}

    def handle(self, signum: int, _frame) -> None:
        if self.child is not None:
            _forward(self.child, signum)
        elif self.pending:
            raise Stopped(signum)
        else:
            self.pending.append(signum)

    def started(self, child: int) -> None:
        self.child = child
        for signum in self.pending:
            _forward(child, signum)

    def restore(self) -> None:
        """The handlers as before: the command runs here after all."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)


def run_there(path: str, argv: list[str]) -> int | None:
    """The command's exit status, run by the command process; None when it would not run it (or the
    status a signal asked for, when one came before it did)."""
    from xmdata.service.command_server import recv_message, send_message

    forwarder = Forwarder()
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        conn.connect(path)
        send_message(conn, {"argv": argv, "cwd": os.getcwd(), "env": settings.child_env()}, [0, 1, 2])
        reply, _ = recv_message(conn)
        if "pid" in reply:
            forwarder.started(reply["pid"])
    except (OSError, ConnectionError, ValueError):
        pass
    except Stopped as stopped:  # before the pid: the closed connection ends a command it had begun
        return 128 + stopped.signum
    finally:
        if forwarder.child is None:
            forwarder.restore()  # first: no Stopped from here on
            conn.close()
    if forwarder.child is None:
        return 128 + forwarder.pending[0] if forwarder.pending else None  # stopped before it began
    try:
        done, _ = recv_message(conn)
        return int(done["exit"])
    except (OSError, ConnectionError, ValueError, KeyError):
        print("xmdata: error: the command's process ended without an exit status", file=sys.stderr)
        return FAILED
    finally:
        conn.close()


def _forward(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    where, why = decide(argv, settings.child_env(), None if argv and argv[0] in HERE else command_process_info())
    if where is not None:
        code = run_there(where, argv)
        if code is not None:
            return code
    from xmdata.cli import main as run_here

    if argv and argv[0] in VERBOSE:  # -v: warm or cold, and why (a -v command is always cold)
        print(f"xmdata: {why}", file=sys.stderr)
    return run_here(argv)
