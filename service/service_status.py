"""`xmdata up`, `xmdata down`, `xmdata status`."""
from __future__ import annotations

import contextlib
import json
import os
import time

from xmdata.runtime.owner_only import DaskCredentials, DaskTarget

from .service import code_fingerprint, paths, read_state, running_service, service_target
from .service_files import INFO_NAME
from .service_start import ensure_service
from .service_stop import stop_service


def worker_facts(target) -> dict:
    """Per worker: pid, memory in use, and the models it holds (least recently used first)."""
    from xmdata.runtime.cluster import connect

    def facts():
        import os

        import psutil

        from xmdata.models import registry

        return {"pid": os.getpid(), "rss_mb": psutil.Process().memory_info().rss // 2**20,
                "models": registry.loaded_models(), "model_load_s": round(registry.MODELS.load_seconds, 2)}

    with connect(target, timeout=10) as client:
        return client.run(facts)


def tree_mb(pid: int | None) -> int:
    """Resident memory of a process and all its descendants, in MB (0 if it is gone)."""
    import psutil

    total = 0
    with contextlib.suppress(psutil.Error):
        root = psutil.Process(pid)
        for proc in [root, *root.children(recursive=True)]:
            with contextlib.suppress(psutil.Error):  # one that exits meanwhile counts for nothing
                total += proc.memory_info().rss
    return total // 2**20


def memory_mb(state: dict) -> dict[str, int]:
    """What the service holds: itself (scheduler, nannies), its Prefect server, its workers, the warm
    command process, all told (resident)."""
    import psutil

    with contextlib.suppress(psutil.Error):
        service = psutil.Process(state["pid"]).memory_info().rss // 2**20
        total, prefect = tree_mb(state["pid"]), tree_mb(state.get("prefect_pid"))
        commands = 0  # the warm command process (its own session, not the service's child); not the commands it runs
        with contextlib.suppress(OSError, ValueError, KeyError, psutil.Error):
            with open(os.path.join(state["secrets"], INFO_NAME), encoding="utf-8") as f:
                commands = psutil.Process(json.load(f)["pid"]).memory_info().rss // 2**20
        return {"total": total + commands, "service": service, "prefect": prefect, "commands": commands,
                "workers": max(0, total - service - prefect)}
    return {"total": 0, "service": 0, "prefect": 0, "commands": 0, "workers": 0}


def print_status(state: dict) -> None:
    used = time.time() - _mtime(paths()["used"])
    print(f"xmdata service: up (pid {state['pid']}, since {state['started']})")
    print(f"  Prefect API  {state['prefect_api_url']}   UI {state['ui_url']}")
    print(f"  UI password  in {os.path.join(state['secrets'], 'prefect-auth')} (the whole line; only you can read it)")
    print(f"  Dask         {state['dask_address'] or 'starting'}   {state['workers']} workers, mutual TLS "
          f"(certificates in {state['secrets']})")
    if state.get("dashboard"):
        print(f"  dashboard    {state['dashboard']}")
    print(f"  unused for   {used / 60:.1f} min; workers retired after {state['model_idle_minutes']:g} min "
          f"without a task, the service stops after {state['idle_minutes']:g} min unused")
    print(f"  log          {state['log']}")
    mb = memory_mb(state)
    print(f"  memory       {mb['total']:,} MB all told: service (scheduler) {mb['service']:,}, "
          f"Prefect server {mb['prefect']:,}, command process {mb['commands']:,}, "
          f"workers {mb['workers']:,}")
    if not state["dask_address"]:
        return
    if state.get("retired"):
        print("  workers      retired (no task for a while); they come back for the next command that needs them")
        return
    target = DaskTarget(state["dask_address"], DaskCredentials.read(state["secrets"]))  # status calls none back
    for address, facts in sorted(worker_facts(target).items()):
        models = ", ".join(f"{m['kind']}:{m['model']}" for m in facts["models"]) or "no models"
        print(f"  worker {address}  pid {facts['pid']}, {facts['rss_mb']:,} MB, {models}")


def _mtime(path: str) -> float:
    try:
        return os.stat(path).st_mtime
    except FileNotFoundError:
        return time.time()


def service_command(args) -> int:
    if args.command == "up":
        state = ensure_service(workers=args.workers, quiet=True, dashboard=args.dashboard)
        service_target(state)  # `up` returns with the cluster up, not only Prefect
        print_status(read_state() or state)
        return 0
    if args.command == "down":
        state = read_state()
        print("xmdata service: stopped" if stop_service(state) else "xmdata service: was not running")
        return 0
    state = running_service()
    if state is None:
        stale = read_state()
        if stale and stale.get("fingerprint") != code_fingerprint():
            print("xmdata service: running other code (the next command restarts it)")
        else:
            print("xmdata service: not running (the next command starts it; or `xmdata up`)")
        return 3  # xmdata/exit_codes.NOT_RUNNING (the runtime does not import the CLI)
    print_status(state)
    return 0
