"""Backends by name, and one loaded instance per (kind, spec) per process.

In a Dask worker that means one model per worker, reused by every shard the worker runs
(the NeMo-Curator ``load_object_on_worker`` pattern) — never one per task. A Dask worker that has
run no shard for XMDATA_MODEL_IDLE_MINUTES gives its models' memory back.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import importlib
import os
import sys
import threading
import time
from collections import OrderedDict

from .base import ModelError, ModelSpec

BACKENDS: dict[str, dict[str, str]] = {
    "language_identifier": {"fasttext": "xmdata.models.fasttext_lid:FastTextLanguageIdentifier"},
    "translator": {
        # The spec's `engine` option picks transformers' generate() or CTranslate2 (ct2_translator.py).
        "m2m100": "xmdata.models.ct2_translator:m2m100_translator",
        "madlad": "xmdata.models.ct2_translator:madlad_translator",
    },
    "quality_estimator": {"cometkiwi": "xmdata.models.cometkiwi:CometKiwiEstimator"},
    "clip_scorer": {"open_clip": "xmdata.models.open_clip_scorer:OpenClipScorer"},
    "embedder": {"open_clip": "xmdata.models.embedders:OpenClipEmbedder", "hf": "xmdata.models.embedders:HfEmbedder"},
}

# Least recently used first. A warm worker keeps its models for the next stage and the next run,
# up to MEMORY_ENV bytes of parameters; past that the least recently used ones are released.
_loaded: OrderedDict[tuple[str, ModelSpec], object] = OrderedDict()
_lock = threading.Lock()
load_count = 0  # loads done in this process; tests read it to prove reuse
load_seconds = 0.0  # time spent loading (imports included), reported apart from the work
released: list[tuple[str, str]] = []  # (kind, name) of models released: past the limit, or idle
MEMORY_ENV = "XMDATA_MODEL_MEMORY_GB"
DEFAULT_MEMORY_GB = 8.0
_last_used = 0.0  # time.monotonic() of the last get_model, or of the last look that found a shard running
_watcher: threading.Thread | None = None  # releases the models once idle; runs while some are held


def backend_class(kind: str, backend: str) -> type:
    if kind not in BACKENDS:
        raise ModelError(f"unknown model kind {kind!r}; known: {sorted(BACKENDS)}")
    if backend not in BACKENDS[kind]:
        raise ModelError(f"unknown {kind} backend {backend!r}; known: {sorted(BACKENDS[kind])}")
    module, _, name = BACKENDS[kind][backend].partition(":")
    return getattr(importlib.import_module(module), name)


def get_model(kind: str, spec: ModelSpec):
    """The loaded model for this spec, loading it on first use in this process."""
    global load_count, load_seconds, _last_used
    key = (kind, spec)
    with _lock:
        if key not in _loaded:
            started = time.perf_counter()
            model = backend_class(kind, spec.backend)(spec)
            model.load()
            load_seconds += time.perf_counter() - started
            _loaded[key] = model
            load_count += 1
            _release_beyond(memory_limit(), keep=key)
            _watch_idle()
        _loaded.move_to_end(key)
        _last_used = time.monotonic()
        return _loaded[key]


def memory_limit() -> float:
    return float(os.environ.get(MEMORY_ENV, DEFAULT_MEMORY_GB)) * 1e9


def model_bytes(model) -> int:
    """Parameter and buffer bytes of a loaded model's torch modules (0 for non-torch models)."""
    import sys

    if "torch" not in sys.modules:
        return 0
    import torch

    modules = [v for v in vars(model).values() if isinstance(v, torch.nn.Module)]
    return sum(t.numel() * t.element_size() for m in modules
               for t in [*m.parameters(), *m.buffers()])


def _release_beyond(limit: float, keep) -> None:
    """Release least recently used models until the rest fit in `limit` (never the one just loaded)."""
    sizes = {key: model_bytes(model) for key, model in _loaded.items()}
    dropped = []
    for key in list(_loaded):
        if sum(sizes.values()) <= limit:
            break
        if key != keep and sizes[key] > 0:  # releasing what holds no weights frees nothing
            dropped.append((key[0], key[1].name_or_path))
            del _loaded[key], sizes[key]
    if dropped:  # this call's releases only: a load after an earlier release pays no collection
        released.extend(dropped)
        free_memory()


def release_all() -> list[tuple[str, str]]:
    """Drop every model this process holds and give their memory back; returns what was dropped."""
    with _lock:
        dropped = _drop_all()
    if dropped:
        free_memory()
    return dropped


def _drop_all() -> list[tuple[str, str]]:
    dropped = [(kind, spec.name_or_path) for kind, spec in _loaded]
    _loaded.clear()
    released.extend(dropped)
    return dropped


def free_memory() -> None:
    """Collect the dropped models, empty torch's CUDA cache, and hand the freed heap back to the
    system (glibc keeps it otherwise, and the process's RSS would not fall)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _watch_idle() -> None:
    """Under _lock, after a load: start the thread that releases the models once idle, if none runs."""
    global _watcher
    from xmdata.runtime.service import model_idle_seconds

    idle_s = model_idle_seconds()
    # Only a Dask worker's: a command's own process ends with its run, and one of its shards may
    # outlast the idle time (the models it asked for at its start would be loaded again after it).
    if _watcher is None and idle_s < float("inf") and _in_a_dask_worker():
        _watcher = threading.Thread(target=_release_when_idle, args=(idle_s,), name="xmdata-model-idle",
                                    daemon=True)
        _watcher.start()


def _release_when_idle(idle_s: float) -> None:
    """Release every model once no shard has asked for one, and none has run, for `idle_s`."""
    global _last_used, _watcher
    while True:
        time.sleep(min(max(idle_s / 4, 0.5), 30.0))
        with _lock:
            if _shard_running():
                _last_used = time.monotonic()
            elif not _loaded or time.monotonic() - _last_used >= idle_s:
                _watcher = None  # the next load starts another
                dropped = _drop_all()
                break
    if dropped:
        free_memory()


def _in_a_dask_worker() -> bool:
    worker = sys.modules.get("distributed.worker")
    return worker is not None and bool(list(worker.Worker._instances))


def _shard_running() -> bool:
    """A Dask worker in this process is running a task: its shard holds the models it asked for at
    its start, so they are in use however long ago that was."""
    worker = sys.modules.get("distributed.worker")
    return worker is not None and any(w.state.executing_count for w in list(worker.Worker._instances))


def loaded_models() -> list[dict]:
    """What this process holds, least recently used first (for `xmdata status`)."""
    with _lock:
        return [{"kind": kind, "model": spec.name_or_path, "bytes": model_bytes(model)}
                for (kind, spec), model in _loaded.items()]


def translator_languages(spec: ModelSpec) -> list[str]:
    """The target languages a translator accepts, read from its tokenizer alone: a run can refuse
    an unsupported language before any weights are loaded."""
    with _lock:
        loaded = _loaded.get(("translator", spec))
    if loaded is None:
        loaded = backend_class("translator", spec.backend)(spec)
        loaded.load_tokenizer()
    return loaded.supported_languages()
