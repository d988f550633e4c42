"""Backends by name, and one loaded instance per (kind, spec) per process.

In a Dask worker that means one model per worker, reused by every shard the worker runs
(the NeMo-Curator ``load_object_on_worker`` pattern) — never one per task.
"""
from __future__ import annotations

import importlib
import os
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
released: list[tuple[str, str]] = []  # (kind, name) of models released to stay under the limit
MEMORY_ENV = "XMDATA_MODEL_MEMORY_GB"
DEFAULT_MEMORY_GB = 8.0


def backend_class(kind: str, backend: str) -> type:
    if kind not in BACKENDS:
        raise ModelError(f"unknown model kind {kind!r}; known: {sorted(BACKENDS)}")
    if backend not in BACKENDS[kind]:
        raise ModelError(f"unknown {kind} backend {backend!r}; known: {sorted(BACKENDS[kind])}")
    module, _, name = BACKENDS[kind][backend].partition(":")
    return getattr(importlib.import_module(module), name)


def get_model(kind: str, spec: ModelSpec):
    """The loaded model for this spec, loading it on first use in this process."""
    global load_count, load_seconds
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
        _loaded.move_to_end(key)
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
    for key in list(_loaded):
        if sum(sizes.values()) <= limit:
            break
        if key != keep and sizes[key] > 0:  # releasing what holds no weights frees nothing
            released.append((key[0], key[1].name_or_path))
            del _loaded[key], sizes[key]
    if released:
        import gc

        gc.collect()


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
