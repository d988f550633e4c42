"""Stopping the service (service.py): SIGTERM, a wait for its clean stop, SIGKILL past the timeout,
and a check that every process it ran (its Prefect server, its workers, its command process) is gone."""
from __future__ import annotations

import contextlib
import os
import signal
import time

from xmdata.runtime.owner_only import read_private_text

from .service import ServiceError, alive, forget_state, read_state
from .service_files import PID_NAME


def stop_service(state: dict | None = None, timeout: float = 60.0, grace: float = 30.0) -> bool:
    """SIGTERM, then wait for a clean stop (workers, scheduler, server); SIGKILL if it hangs past
    `timeout`. Returns once every process it ran is gone too (its Prefect server, its workers, its
    command process), or raises ServiceError naming those still
    alive `grace` seconds after the service itself."""
    state = state or read_state()
    if not state or not alive(state["pid"]):
        forget_state(state and state.get("pid"))
        return False
    stopping = service_processes(state)
    os.kill(state["pid"], signal.SIGTERM)
    deadline = time.monotonic() + timeout
    while alive(state["pid"]) and time.monotonic() < deadline:
        time.sleep(0.1)
    if alive(state["pid"]):
        os.killpg(state["pid"], signal.SIGKILL)
    forget_state(state and state.get("pid"))
    deadline = time.monotonic() + grace
    while (left := still_running(stopping)) and time.monotonic() < deadline:
        time.sleep(0.1)
    if left:
        raise ServiceError(f"the service stopped, but {grace:g} s later these of its processes still run: "
                           + "; ".join(left))
    return True


def service_processes(state: dict) -> list:
    """psutil.Process of the service and everything it started (its Prefect server and that one's
    children, its workers, multiprocessing's resource tracker), and of its
    command process (a session of its own)."""
    import psutil

    found = []
    with contextlib.suppress(psutil.Error):
        service = psutil.Process(state["pid"])
        found = [service, *service.children(recursive=True)]
    with contextlib.suppress(OSError, ValueError, psutil.Error):
        commands = psutil.Process(int(read_private_text(os.path.join(state["secrets"], PID_NAME))))
        if "xmdata.service.command_server" in commands.cmdline():
            found.append(commands)
    return found


def still_running(processes: list) -> list[str]:
    """'PID (command line)' of each of PROCESSES still running; an exited one its parent has not
    reaped yet (a zombie) is gone."""
    import psutil

    left = []
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(f"{proc.pid} ({' '.join(proc.cmdline())[:120]})")
    return left
