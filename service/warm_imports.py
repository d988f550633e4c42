"""What the warm command process imports and builds before it serves: each command is a fork of
it, so what is done here once is not done again by every command (service/command_server.py)."""
from __future__ import annotations

import importlib

# What commands import before they work (listed from `sys.modules` after a demo re-check and a
# 10-row command): the libraries, Prefect's run engines and what they load on first use (fastapi's
# encoders, graphviz for visualisation, telemetry), the language-code data, the metrics' statistics
# (scipy.stats: tasks/evaluation imports it where a metric runs), the command line. The last four
# were still imported by every command (filelock, the folder lock's since it moved there; the
# manifest's package metadata; fastText): ~20 ms a command more, listed again on 2026-12-02.
WARM_MODULES = ("prefect.main", "prefect.flow_engine", "prefect.task_engine", "prefect.engine",
                "prefect.concurrency.sync", "prefect.utilities.visualization", "prefect.telemetry.run_telemetry",
                "fastapi", "fastapi.encoders", "anyio._backends._asyncio", "distributed", "pandas", "polars",
                "pyarrow.parquet", "pyarrow.dataset", "langcodes.data_dicts", "langcodes.language_distance",
                "reverse_geocoder", "scipy.stats", "xmdata.cli", "xmdata.commands", "xmdata.flow_run",
                "xmdata.service.service", "xmdata.service.run_setup", "xmdata.runtime.dask_executor",
                "xmdata.runtime.storage_check", "xmdata.models.tiny", "xmdata.models.translators",
                "xmdata.models.languages", "xmdata.tasks.clean.fingerprint", "xmdata.server_watch", "filelock",
                "importlib_metadata._adapters", "fasttext")


def warm_up() -> None:
    """Every module a command imports before it works: the libraries, the command line, every flow."""
    import pkgutil

    for name in WARM_MODULES:
        try:
            importlib.import_module(name)
        except ImportError as exc:  # a library's internals moved: the command imports what it needs
            print(f"command process: {name} not imported: {exc}", flush=True)
    flows = importlib.import_module("xmdata.flows")
    for module in pkgutil.iter_modules(flows.__path__, "xmdata.flows."):
        try:
            importlib.import_module(module.name)
        except Exception as exc:  # noqa: BLE001 — the command that needs it imports it, and says why it fails
            print(f"command process: {module.name} not imported: {type(exc).__name__}: {exc}", flush=True)
    build_deferred_models()


def build_deferred_models() -> None:
    """Prefect's pydantic models defer their validators to first use (pydantic's `defer_build`): in
    a fork that is every command again (a flow run's first state, flow and artifact models: ~0.2
    CPU-s a command). `model_rebuild` builds them here once (261 models, ~0.25 CPU-s, ~4 MB), for
    every fork to share; one that cannot be built yet is left to its first use, as before."""
    from pydantic import BaseModel

    stack, seen = [BaseModel], set()
    while stack:
        for model in stack.pop().__subclasses__():
            if model not in seen:
                seen.add(model)
                stack.append(model)
                try:
                    model.model_rebuild(raise_errors=False)
                except Exception:  # noqa: BLE001 — a model this cannot build is built where it is used
                    pass
