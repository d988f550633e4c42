"""A contamination reference's fingerprint for the manifest: its files, their count, bytes and one sha256
over relative names and contents (path-independent: the same reference gives the same value anywhere).

A training set can be millions of files: each file's sha256 is kept in XMDATA_CACHE/reference-hashes/
keyed by its path, size, mtime, inode and ctime, so a re-check of an unchanged reference hashes nothing again.
The cache is the user's own (0700 folder, 0600 file), and a damaged one is rebuilt, never trusted.
"""
from __future__ import annotations

import hashlib
import json
import os

from xmdata.runtime import settings
from xmdata.runtime.atomic import sha256_file, write_json_atomic


def cache_path(path: str) -> str:
    key = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:32]
    return os.path.join(settings.CACHE.get(), "reference-hashes", f"{key}.json")


def _load(cache: str) -> dict:
    try:
        with open(cache, encoding="utf-8") as f:
            data = json.load(f)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def reference_fingerprint(path: str) -> dict:
    """{"files", "bytes", "sha256"} of a file or of every file under a folder (links followed)."""
    path = os.path.abspath(path)
    files = [path] if os.path.isfile(path) else sorted(
        os.path.join(d, n) for d, _, names in os.walk(path, followlinks=True) for n in names)
    names = [os.path.relpath(file, path) if file != path else os.path.basename(file) for file in files]
    return files_fingerprint(files, names, cache_path(path))


def files_fingerprint(files: list[str], names: list[str], cache_file: str) -> dict:
    """{"files", "bytes", "sha256"} of FILES under their NAMES (one sha256 over names and contents), each
    file's sha256 kept in CACHE_FILE by size, mtime, inode and ctime: an unchanged file is not read again."""
    known, fresh, lines, total = _load(cache_file), {}, [], 0
    for file, name in zip(files, names):
        st = os.stat(file)
        # ctime too: a rewrite that keeps size and puts mtime back (os.utime, a copy with -p) still moves it
        stamp = f"{st.st_size}:{st.st_mtime_ns}:{st.st_ino}:{st.st_ctime_ns}"
        entry = known.get(file)
        digest = entry[1] if isinstance(entry, list) and len(entry) == 2 and entry[0] == stamp else sha256_file(file)
        fresh[file] = [stamp, digest]
        total += st.st_size
        lines.append(f"{name}\0{digest}\n")
    if fresh != known:
        os.makedirs(os.path.dirname(cache_file), mode=0o700, exist_ok=True)
        write_json_atomic(fresh, cache_file, private=True)
    return {"files": len(files), "bytes": total, "sha256": hashlib.sha256("".join(lines).encode()).hexdigest()}

