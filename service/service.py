"""The xmdata service: one Prefect server and one warm Dask cluster on 127.0.0.1, started once in
the background and found again by every later command, so a command pays neither a server start
(6–14 s) nor a cluster start nor its workers' imports and model loads.

Only its owner gets in (owner_only.py): the scheduler and workers speak mutual TLS with a CA made
for this service, the Prefect API asks for a password made for it; both sit 0600 in the 0700
folder `<state>.secrets/` beside the state file, where every command of the owner finds them.
`xmdata up` starts it (a command starts it too, on first use, unless XMDATA_SERVICE=off);
`xmdata down` stops it; `xmdata status` shows it. Idle means small: after XMDATA_MODEL_IDLE_MINUTES
(default 3) without a shard it retires its workers (and any worker, its own or not, drops its
models: models/registry.py), which come back when a command needs the cluster (`service_target`
asks, SIGUSR1); after XMDATA_IDLE_MINUTES (default 60) without a command, or once its Prefect home
or state folder is deleted, it stops. Its server and workers die with it, SIGKILL included. One
service per environment and Prefect home: the state file's name is keyed by both, and a service
running other code than this checkout's is restarted, never used.
"""
from __future__ import annotations

import contextlib
import json
import os
import signal
import time

from xmdata.runtime import settings
from xmdata.runtime.code_version import code_fingerprint  # noqa: F401  (for callers)
from xmdata.runtime.owner_only import (DaskCredentials, DaskTarget, open_private, private_folder, read_private_text,
                                       write_private)
from xmdata.runtime.prefect_api import healthy
from xmdata.runtime.storage import cache_root

from .service_files import PID_NAME, light_prefect_home, service_key

WAKE_SIGNAL = signal.SIGUSR1  # to the service: a command needs its retired workers back
CLUSTER_START_S = 300.0  # from Prefect answering to the cluster's workers up, at most



class ServiceError(RuntimeError):
    pass


def state_dir() -> str:
    """The services' folder: the owner's alone (0700), refused if anyone else can write to it."""
    return private_folder(os.path.join(cache_root(), "service"))


def prefect_home() -> str:
    """PREFECT_HOME as Prefect resolves it in this folder; without importing Prefect (~1.3 CPU-s)
    where no config file here could name it (service_files.light_prefect_home)."""
    if (home := light_prefect_home()) is not None:
        return home
    from prefect.settings import PREFECT_HOME  # noqa: PLC0415 — reads the settings, not the server

    return str(PREFECT_HOME.value())


def _key() -> str:
    return service_key(prefect_home())


def paths() -> dict[str, str]:
    base = os.path.join(state_dir(), _key())
    return {"state": base + ".json", "log": base + ".log", "lock": base + ".lock", "used": base + ".used",
            "secrets": base + ".secrets"}


def model_idle_seconds() -> float:
    """XMDATA_MODEL_IDLE_MINUTES in seconds: how long a worker keeps unused models (`inf`: always)."""
    return settings.MODEL_IDLE_MINUTES.get() * 60


def idle_seconds() -> float:
    """XMDATA_IDLE_MINUTES in seconds: how long the service waits for a command before stopping."""
    return settings.IDLE_MINUTES.get() * 60


def service_target(state: dict, timeout: float = None) -> DaskTarget:
    """The service's scheduler (waited for while its cluster starts, its workers called back if it
    had retired them) with its credentials."""
    timeout = timeout or CLUSTER_START_S
    address = cluster_address(state["pid"], timeout)
    workers_back(state["pid"], timeout)
    return DaskTarget(address, DaskCredentials.read(state["secrets"]))


def workers_back(pid: int, timeout: float = CLUSTER_START_S) -> None:
    """Once the service has its workers: asks for them if it retired them, and waits."""
    touch_used()  # a command is here: the service must not retire them again before it connects
    deadline, asked = time.monotonic() + timeout, False
    while (state := read_state()) and state["pid"] == pid and state.get("retired"):
        if not asked:
            os.kill(pid, WAKE_SIGNAL)
            asked = True
        if not alive(pid) or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    if not state or state["pid"] != pid or state.get("retired"):
        raise ServiceError(f"the xmdata service's workers did not come back (log {paths()['log']}):\n"
                           f"{log_tail()}")


def prefect_auth(state: dict) -> str:
    """The password of the service's Prefect API (`user:password`, as the UI's login asks for it)."""
    return read_private_text(os.path.join(state["secrets"], "prefect-auth"))


def read_state() -> dict | None:
    try:
        with open(paths()["state"], encoding="utf-8") as f:
            return json.load(f)
    except (FileNotFoundError, json.JSONDecodeError):
        return None


def alive(pid: int) -> bool:
    try:
        if os.waitpid(pid, os.WNOHANG)[0] == pid:  # our own child, exited: reap it
            return False
    except ChildProcessError:
        pass  # not our child: signal 0 says whether it exists
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return not _zombie(pid)  # exited, not yet reaped by its parent (the command that started it, still running)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[0] == b"Z"
    except (OSError, IndexError):
        return False  # not Linux, or gone meanwhile: os.kill said enough


def running_service() -> dict | None:
    """The service's state if it is up, answers, and runs this code; else None."""
    if not settings.SERVICE.get():
        return None
    state = read_state()
    if (state and alive(state["pid"]) and state["fingerprint"] == code_fingerprint()
            and healthy(state["prefect_api_url"])):
        return state
    return None


def touch_used() -> None:
    with open_private(paths()["used"], "ab"):
        os.utime(paths()["used"])


def stop_command_process(secrets: str) -> None:
    """SIGTERM to the service's command process (its pid in SECRETS, checked to be one), so that one
    still waiting or importing when the service stops does not go on for nothing."""
    try:
        pid = int(read_private_text(os.path.join(secrets, PID_NAME)))
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"xmdata.service.command_server" in f.read():
                os.kill(pid, signal.SIGTERM)
    except (OSError, ValueError):
        pass  # none started, gone already, or not Linux (it sees the service gone within a second)


def cluster_address(pid: int | None = None, timeout: float = CLUSTER_START_S) -> str:
    """The service's scheduler address, waiting while its cluster starts (the state file is
    written before, as soon as Prefect answers). `pid`: the service the command checked; another
    one (restarted meanwhile, maybe running other code) is never used."""
    deadline = time.monotonic() + timeout
    while True:
        state = read_state()
        if state and pid is not None and state["pid"] != pid:
            raise ServiceError("the xmdata service was restarted while this command ran; run it again")
        if state and state.get("dask_address"):
            return state["dask_address"]
        if not state or not alive(state["pid"]) or time.monotonic() > deadline:
            raise ServiceError(f"the xmdata service's Dask cluster did not start (log {paths()['log']}):\n"
                               f"{log_tail()}")
        time.sleep(0.1)


def log_tail(chars: int = 2000) -> str:
    """The end of the service's log, for an error that says why it did not start."""
    try:
        with open(paths()["log"], encoding="utf-8", errors="replace") as log:
            return log.read()[-chars:]
    except FileNotFoundError:
        return ""


def cluster_starting_too_long(state: dict) -> bool:
    """A service whose cluster has not come up in CLUSTER_START_S is restarted, not waited on forever."""
    try:
        written = os.stat(paths()["state"]).st_mtime
    except FileNotFoundError:
        return False
    return not state.get("dask_address") and time.time() - written > CLUSTER_START_S


def forget_state(pid: int | None) -> None:
    """Remove the state file when it describes service PID (or no service, or PID is None): a state
    another service wrote meanwhile is that one's (stop_service, and a service's own end)."""
    current = read_state()
    if current is not None and pid is not None and current.get("pid") != pid:
        return
    with contextlib.suppress(FileNotFoundError):
        os.unlink(paths()["state"])


def write_state(state: dict) -> None:
    write_private(paths()["state"], json.dumps(state, indent=1))
