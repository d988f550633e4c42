"""The memo's keys and where they lead on disk (runtime/memo.py): a unit's key, its context's digest
and folder, an entry's check and an entry file's name. The layout these make is the one every memo
folder has had since entries were first written: `MEMO/<kind>/<ab>/<context sha256>/` holding
`context.json` and `<40 hex of the content's sha256>.parquet` files of (key, value, check) rows,
and `MEMO/runs/` beside the kinds (tests/runtime/test_memo_layout.py pins it, bytes included)."""
from __future__ import annotations

import hashlib
import json
from typing import Sequence

from . import storage

MISSING = object()  # a lookup's answer for a key the memo does not hold (a stored value may be None)
ENTRY_SUFFIX = ".parquet"
CONTEXT_FILE = "context.json"
RUNS = "runs"  # a file per build that used the memo: what `memo stats` shows as recent runs


def canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def without(params: dict, excluded: Sequence[str]) -> dict:
    """`params` less the dotted paths `excluded` ("translator.name_or_path")."""
    out = json.loads(json.dumps(params, default=str))
    for path in excluded:
        *parents, last = path.split(".")
        node = out
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return out


def unit_key(model_input) -> str:
    """The key of one unit: the sha256 of its exact model input."""
    return hashlib.sha256(canonical(model_input)).hexdigest()


def context_folder(location: str, whole: dict) -> str:
    """The folder of a context (`whole`: its kind, stage, params and the models' and platform's facts)."""
    digest = hashlib.sha256(canonical(whole)).hexdigest()
    return storage.join(location, whole["kind"], digest[:2], digest)


def entry_check(key: str, value: bytes) -> str:
    """What an entry carries to be checked on read: the sha256 of its key and encoded value."""
    return hashlib.sha256(key.encode() + b"\0" + value).hexdigest()


def entry_file_name(entries: dict[str, bytes]) -> str:
    """The name of the entry file holding `entries` (key -> encoded value): by its content."""
    keys = sorted(entries)
    return hashlib.sha256(b"".join(k.encode() + entries[k] for k in keys)).hexdigest()[:40] + ENTRY_SUFFIX


def is_entry_file(name: str) -> bool:
    return name.endswith(ENTRY_SUFFIX) and not name.startswith(".")
