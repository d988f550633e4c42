"""Facts kept in XMDATA_CACHE so that a later process skips a slow computation: a translator's
languages (models/languages.py), a model's loader facts (models/loader_facts.py), torch's build facts
(tasks/release/manifest.py). Each is one JSON file, XMDATA_CACHE/<folder>/<key>.json, the key a hash of
what decides the fact; the owner's alone (0700 folder, 0600 file, written atomically). A file that
cannot be read or parsed is no record: the caller computes the fact again, and checks what it reads.
"""
from __future__ import annotations

import json
import os
from typing import Any

from . import settings


def cache_record_path(folder: str, key: str) -> str:
    return os.path.join(settings.CACHE.get(), folder, f"{key}.json")


def read_cache_record(folder: str, key: str) -> Any | None:
    """The parsed record, or None: none yet, unreadable, or not JSON."""
    try:
        with open(cache_record_path(folder, key), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def write_cache_record(folder: str, key: str, record: Any) -> None:
    from .owner_only import write_private  # it imports the contract (pyarrow): not at this module's import

    write_private(cache_record_path(folder, key), json.dumps(record, indent=1) + "\n")


def drop_cache_record(folder: str, key: str) -> None:
    try:
        os.unlink(cache_record_path(folder, key))
    except OSError:
        pass
