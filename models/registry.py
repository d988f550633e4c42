"""Backends by name, and one loaded instance per (kind, spec) per process.

In a Dask worker that means one model per worker, reused by every shard the worker runs
(the NeMo-Curator ``load_object_on_worker`` pattern) — never one per task.
"""
from __future__ import annotations

import importlib
import threading

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
}

_loaded: dict[tuple[str, ModelSpec], object] = {}
_lock = threading.Lock()
load_count = 0  # loads done in this process; tests read it to prove reuse


def backend_class(kind: str, backend: str) -> type:
    if kind not in BACKENDS:
        raise ModelError(f"unknown model kind {kind!r}; known: {sorted(BACKENDS)}")
    if backend not in BACKENDS[kind]:
        raise ModelError(f"unknown {kind} backend {backend!r}; known: {sorted(BACKENDS[kind])}")
    module, _, name = BACKENDS[kind][backend].partition(":")
    return getattr(importlib.import_module(module), name)


def get_model(kind: str, spec: ModelSpec):
    """The loaded model for this spec, loading it on first use in this process."""
    global load_count
    key = (kind, spec)
    with _lock:
        if key not in _loaded:
            model = backend_class(kind, spec.backend)(spec)
            model.load()
            _loaded[key] = model
            load_count += 1
        return _loaded[key]


def translator_languages(spec: ModelSpec) -> list[str]:
    """The target languages a translator accepts, read from its tokenizer alone: a run can refuse
    an unsupported language before any weights are loaded."""
    with _lock:
        loaded = _loaded.get(("translator", spec))
    if loaded is None:
        loaded = backend_class("translator", spec.backend)(spec)
        loaded.load_tokenizer()
    return loaded.supported_languages()
