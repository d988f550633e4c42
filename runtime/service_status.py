"""`xmdata up`, `xmdata down`, `xmdata status`."""
from __future__ import annotations

import os
import time

from .service import (code_fingerprint, ensure_service, paths, read_state, running_service, service_target,
                      stop_service)


def worker_facts(target) -> dict:
    """Per worker: pid, memory in use, and the models it holds (least recently used first)."""
    from .cluster import connect

    def facts():
        import os

        import psutil

        from xmdata.models import registry

        return {"pid": os.getpid(), "rss_mb": psutil.Process().memory_info().rss // 2**20,
                "models": registry.loaded_models(), "model_load_s": round(registry.load_seconds, 2)}

    with connect(target, timeout=10) as client:
        return client.run(facts)


def print_status(state: dict) -> None:
    used = time.time() - _mtime(paths()["used"])
    print(f"xmdata service: up (pid {state['pid']}, since {state['started']})")
    print(f"  Prefect API  {state['prefect_api_url']}   UI {state['ui_url']}")
    print(f"  UI password  in {os.path.join(state['secrets'], 'prefect-auth')} (the whole line; only you can read it)")
    print(f"  Dask         {state['dask_address'] or 'starting'}   {state['workers']} workers, mutual TLS "
          f"(certificates in {state['secrets']})")
    if state.get("dashboard"):
        print(f"  dashboard    {state['dashboard']}")
    print(f"  unused for   {used / 60:.1f} min; stops after {state['idle_minutes']:g} min unused")
    print(f"  log          {state['log']}")
    if not state["dask_address"]:
        return
    for address, facts in sorted(worker_facts(service_target(state)).items()):
        models = ", ".join(f"{m['kind']}:{m['model']}" for m in facts["models"]) or "no models"
        print(f"  worker {address}  pid {facts['pid']}, {facts['rss_mb']} MB, {models}")


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
        return 3
    print_status(state)
    return 0
