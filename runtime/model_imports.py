"""Imported by the service's worker forkserver (worker_start.py): the model backends' libraries and
classes (models/registry.BACKEND_IMPORTS), each on its own. One that fails to import, whatever it raises
(not installed, or broken: a torch/torchvision mismatch raises RuntimeError), is left out here and left to
the worker whose stage needs it, where that stage fails with the library's own error; the forkserver, and
every other stage's workers, go on."""
from __future__ import annotations

import importlib

from xmdata.models.registry import BACKEND_IMPORTS


def import_each(names: tuple[str, ...]) -> dict[str, str]:
    """{module: what its import raised} of the NAMES that failed; the others imported."""
    failed = {}
    for name in names:
        try:
            importlib.import_module(name)
        except Exception as exc:  # noqa: BLE001 — any failure stays the needing stage's, not every worker's
            failed[name] = f"{type(exc).__name__}: {exc}"
    return failed


FAILED = import_each(BACKEND_IMPORTS)  # in the forkserver, as it started
