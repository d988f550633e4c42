"""A published release that nothing has changed is not published again.

After its stages (all skipped on a re-run), a release is published from what its manifest records
(config, inputs, models, packages, code: `facts`), its stages' completion records and the code
that writes the card, plots, explore page and manifest. Their hash is the publication's key. Once
published, the key and every published file's size and mtime go to the build folder
(`publication.json`); a later run with the same key whose files are all there, untouched, keeps the
release as it is — no table gathered, plot drawn, page or manifest written again. Anything else (a
stage run again, a file edited, added or removed, other code) publishes anew.
"""
from __future__ import annotations

import hashlib
import json
import os

from xmdata.runtime.atomic import write_json_atomic
from xmdata.runtime.code_version import code_fingerprint

from .manifest import MANIFEST, canonical_sha256, release_files

RECORD = "publication.json"


def publication_key(facts: dict, work: str) -> str:
    """The release's facts, every completion record under the build folder, and the code."""
    records = {}
    for folder, dirs, names in os.walk(work):
        dirs.sort()
        if os.path.basename(folder) == "_done":
            for name in sorted(names):
                path = os.path.join(folder, name)
                with open(path, "rb") as f:
                    records[os.path.relpath(path, work)] = hashlib.sha256(f.read()).hexdigest()
    return canonical_sha256({"facts": facts, "records": records, "code": code_fingerprint()})


def _stats(out: str, skip: set[str]) -> dict[str, list[int]]:
    found = {}
    for name in [*release_files(out, skip), MANIFEST]:
        try:
            st = os.stat(os.path.join(out, name))
        except FileNotFoundError:
            continue
        found[name] = [st.st_size, st.st_mtime_ns]
    return found


def unchanged(out: str, work: str, skip: set[str], key: str) -> dict | None:
    """The manifest of OUT when it was published with this key and its files are as published."""
    try:
        with open(os.path.join(work, RECORD), encoding="utf-8") as f:
            record = json.load(f)
        if record.get("key") != key or record.get("files") != _stats(out, skip):
            return None
        with open(os.path.join(out, MANIFEST), encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, AttributeError):
        return None


def record_publication(out: str, work: str, skip: set[str], key: str) -> None:
    write_json_atomic({"key": key, "files": _stats(out, skip)}, os.path.join(work, RECORD))
