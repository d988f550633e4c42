"""The languages a translator accepts, known without importing transformers.

Listing them means loading the tokenizer (the transformers import and the tokenizer files: ~7 s in a
command that may have nothing else to do). So the list is recorded once, when the model is built,
converted or first checked, in XMDATA_CACHE/model-languages/<key>.json, the key being a sha256 of
what decides the list: the backend, the tokenizer class, the transformers version (M2M100's language
codes live in its code) and the content of the tokenizer's files — never a path, so an edited or
replaced tokenizer is a new key and is read again. Hub ids key by name and pinned revision (an
unpinned hub id is not recorded: registry.translator_languages reads its tokenizer each time).
The record is the owner's (0700 folder, 0600 file); a damaged one is computed again, never trusted.
"""
from __future__ import annotations

import hashlib
import os
from importlib import metadata

from xmdata.runtime.cache_records import read_cache_record, write_cache_record

from .base import ModelSpec, resolve_local_path

RECORD_VERSION = 1
RECORD_FOLDER = "model-languages"
# The files a Hugging Face tokenizer reads (slow or fast, sentencepiece or BPE); weights never decide it.
TOKENIZER_FILE_PREFIXES = ("tokenizer", "special_tokens_map", "added_tokens", "vocab", "merges", "spiece",
                           "sentencepiece", "source.spm", "target.spm")


def tokenizer_files(folder: str) -> list[str]:
    return sorted(name for name in os.listdir(folder)
                  if name.startswith(TOKENIZER_FILE_PREFIXES) and os.path.isfile(os.path.join(folder, name)))


def _file_digest(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def language_key(spec: ModelSpec, tokenizer_class: str) -> str:
    """What decides the list, hashed. Reads the tokenizer files (a few MB), not the weights."""
    parts = [f"v{RECORD_VERSION}", spec.backend, tokenizer_class, f"transformers={metadata.version('transformers')}"]
    if spec.is_local:
        folder = resolve_local_path(spec)
        parts += [f"{name}={_file_digest(os.path.join(folder, name))}" for name in tokenizer_files(folder)]
    else:
        parts += [f"hub={spec.name_or_path}", f"revision={spec.revision}"]
    return hashlib.sha256("\n".join(parts).encode()).hexdigest()


def recorded_languages(key: str) -> list[str] | None:
    data = read_cache_record(RECORD_FOLDER, key)
    languages = data.get("languages") if isinstance(data, dict) else None
    if not isinstance(data, dict) or data.get("key") != key or not isinstance(languages, list) or not all(isinstance(x, str) for x in languages):
        return None
    return languages


def record_languages(key: str, spec: ModelSpec, languages: list[str]) -> None:
    record = {"key": key, "backend": spec.backend, "model": spec.name_or_path, "languages": sorted(languages)}
    write_cache_record(RECORD_FOLDER, key, record)
