"""Backends by name, and one loaded instance per (kind, spec) per process.

In a Dask worker that means one model per worker, reused by every shard the worker runs
(the NeMo-Curator ``load_object_on_worker`` pattern) — never one per task. A Dask worker that has
run no shard for XMDATA_MODEL_IDLE_MINUTES gives its models' memory back (`MODELS`, model_cache.py).
"""
from __future__ import annotations

import importlib

from xmdata.runtime import settings

from .base import ModelError, ModelSpec
from .model_cache import ModelCache, model_bytes  # noqa: F401  (model_bytes: for callers of the registry)

BACKENDS: dict[str, dict[str, str]] = {
    "language_identifier": {"fasttext": "xmdata.models.fasttext_lid:FastTextLanguageIdentifier"},
    "translator": {
        # The spec's `engine` option picks transformers' generate() or CTranslate2 (translators.py).
        "m2m100": "xmdata.models.translators:m2m100_translator",
        "madlad": "xmdata.models.translators:madlad_translator",
        "nllb": "xmdata.models.translators:nllb_translator",
        "llm": "xmdata.models.translators:llm_translator",  # any causal LM with a chat template
    },
    "quality_estimator": {"cometkiwi": "xmdata.models.cometkiwi:CometKiwiEstimator"},
    "reference_scorer": {"comet": "xmdata.models.comet_ref:CometReferenceScorer"},  # MBR's utility
    "clip_scorer": {"open_clip": "xmdata.models.open_clip_scorer:OpenClipScorer"},
    "embedder": {"open_clip": "xmdata.models.embedders:OpenClipEmbedder", "hf": "xmdata.models.embedders:HfEmbedder",
                 "copy_detection": "xmdata.models.embedders:CopyDetectionEmbedder",
                 "last_token": "xmdata.models.embedders:LastTokenEmbedder"},
}

MODELS = ModelCache()  # this process's loaded models (model_cache.py); MEMORY_ENV bounds them
MEMORY_ENV = settings.MODEL_MEMORY_GB.name


def backend_class(kind: str, backend: str) -> type:
    if kind not in BACKENDS:
        raise ModelError(f"unknown model kind {kind!r}; known: {sorted(BACKENDS)}")
    if backend not in BACKENDS[kind]:
        raise ModelError(f"unknown {kind} backend {backend!r}; known: {sorted(BACKENDS[kind])}")
    module, _, name = BACKENDS[kind][backend].partition(":")
    return getattr(importlib.import_module(module), name)


def get_model(kind: str, spec: ModelSpec):
    """The loaded model for this spec, loading it on first use in this process."""
    return MODELS.get(kind, spec, lambda: _load(kind, spec))


def _load(kind: str, spec: ModelSpec):
    model = backend_class(kind, spec.backend)(spec)
    model.load()
    return model


def loaded_models() -> list[dict]:
    """What this process holds, least recently used first (for `xmdata status`)."""
    return MODELS.loaded()


def translator_languages(spec: ModelSpec) -> list[str]:
    """The target languages a translator accepts, before any weights load: from the record made when
    the model was built, converted or first checked (languages.py), else from its tokenizer alone,
    recorded then. A command that only checks never imports transformers once the record exists."""
    from .languages import language_key, record_languages, recorded_languages

    cls = backend_class("translator", spec.backend)(spec)
    # A hub id without a pinned revision may name other files tomorrow: read from its tokenizer each time.
    key = language_key(spec, cls.tokenizer_class_name) if spec.is_local or spec.revision else None
    languages = recorded_languages(key) if key else None
    if languages is None:
        loaded = MODELS.peek("translator", spec)
        if loaded is None:
            loaded = cls
            loaded.load_tokenizer()
        languages = loaded.supported_languages()
        if key:
            record_languages(key, spec, languages)
    return languages
