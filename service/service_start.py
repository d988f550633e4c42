"""Starting the service (service.py): one start at a time under the services' lock, a running one
reused when it runs this code and answers, else stopped and started again; then its warm command
process (command_server.py) beside it."""
from __future__ import annotations

import fcntl
import os
import subprocess
import sys
import time

from xmdata.runtime import settings
from xmdata.runtime.code_version import code_fingerprint
from xmdata.runtime.owner_only import open_private, write_private
from xmdata.runtime.prefect_api import healthy

from .service import (ServiceError, alive, cluster_starting_too_long, log_tail, paths, prefect_home, read_state,
                      touch_used)
from .service_files import PID_NAME
from .service_stop import stop_service

# A service idles for hours: with Dask's defaults (20 ms event-loop tick, 0.5 s system monitor, a
# profiler sampling every worker thread each 10 ms) each of its processes burns ~1 CPU-s a minute
# doing nothing (measured). No dashboard reads those samples here. The memory monitor, which each
# worker and its nanny run every 100 ms by default, then still made half of an idle cluster's CPU:
# every 1 s, a 2-worker LocalCluster idles at 0.018 CPU-s a second instead of 0.040 (measured,
# 2026-12-02); a worker past its memory limit is stopped within a second instead of 0.1 s.
IDLE_FRIENDLY_DASK = {"DASK_DISTRIBUTED__ADMIN__TICK__INTERVAL": "1s",
                      "DASK_DISTRIBUTED__ADMIN__SYSTEM_MONITOR__INTERVAL": "2s",
                      "DASK_DISTRIBUTED__WORKER__PROFILE__ENABLED": "False",
                      "DASK_DISTRIBUTED__WORKER__MEMORY__MONITOR_INTERVAL": "1s"}


def _idle_friendly_dask() -> dict[str, str]:
    """IDLE_FRIENDLY_DASK less what the user set in the environment: their own values win."""
    theirs = dict(settings.variables(("DASK_",)))
    return {name: value for name, value in IDLE_FRIENDLY_DASK.items() if name not in theirs}


def ensure_service(workers: int | None = None, quiet: bool = False, dashboard: bool = False,
                   for_this_command: bool = False) -> dict:
    """The running service, started (and waited for) if there is none; one start at a time.
    `dashboard`: a running service without its dashboard is restarted with it. `for_this_command`:
    started by a command to run itself, whose core the warm command process leaves to it until it
    ends (command_server.wait_for_first_command)."""
    with open_private(paths()["lock"], "wb") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        state = read_state()
        if state and alive(state["pid"]):
            if (state["fingerprint"] == code_fingerprint() and healthy(state["prefect_api_url"])
                    and not cluster_starting_too_long(state) and (state.get("dashboard") or not dashboard)):
                touch_used()
                return state
            if not quiet:
                print("xmdata: the running service has other code, does not answer or has no dashboard; "
                      "restarting it", file=sys.stderr)
            stop_service(state)
        return _start(workers, quiet, dashboard, os.getpid() if for_this_command else None)


def _start(workers: int | None, quiet: bool, dashboard: bool = False, first_command: int | None = None) -> dict:
    p = paths()
    if os.path.exists(p["state"]):
        os.unlink(p["state"])
    # The home this command resolved (a prefect.toml or .env here may name it): the service runs in
    # "/", where those files are not, and must use the home whose key names its files.
    env = settings.child_env(drop=(settings.PREFECT_API_URL.name,), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                             PREFECT_LOGGING_LEVEL="WARNING", DASK_LOGGING__DISTRIBUTED="warning",
                             **{settings.PREFECT_HOME.name: os.path.abspath(prefect_home())},
                             **_idle_friendly_dask())
    command = [sys.executable, "-m", "xmdata.service.service_main", "--fingerprint", code_fingerprint()]
    if workers:
        command += ["--workers", str(workers)]
    if dashboard:
        command += ["--dashboard"]
    with open_private(p["log"], "ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=env, start_new_session=True, cwd="/")
    deadline = time.monotonic() + 300
    while True:
        state = read_state()
        if state and state.get("pid") == proc.pid:
            break
        if proc.poll() is not None or time.monotonic() > deadline:
            raise ServiceError(f"the xmdata service did not start (log {p['log']}):\n{log_tail()}")
        time.sleep(0.1)
    touch_used()
    _start_command_process(state, p, first_command)
    if not quiet:
        print(f"xmdata: started the local service: Prefect UI {state['ui_url']}, a Dask cluster of "
              f"{state['workers']} workers (starting; retired after {state['model_idle_minutes']:g} min unused, "
              f"back when needed); it stops after {state['idle_minutes']:g} min unused, or with `xmdata down`",
              file=sys.stderr)
    return state


def _start_command_process(state: dict, p: dict[str, str], first_command: int | None = None) -> None:
    """The service's warm command process (command_server.py), in this command's environment (the
    one later commands must share to use it); it ends with the service. `first_command`: the pid of
    the command it waits for before its imports."""
    command = [sys.executable, "-m", "xmdata.service.command_server", "--folder", state["secrets"],
               "--service-pid", str(state["pid"]), "--fingerprint", state["fingerprint"]]
    command += ["--after-pid", str(first_command)] if first_command else []
    with open_private(p["log"], "ab") as log:
        proc = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                env=settings.child_env(), start_new_session=True, cwd="/")
    write_private(os.path.join(state["secrets"], PID_NAME), str(proc.pid))  # the service stops it with itself
