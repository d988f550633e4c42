"""A fault of the environment said in one line: what went, what is kept, what to do (the faults
page: docs/explanation/reliability.md). The engine names where it happened (runtime/faults.py); this says it to the user. Light: read by the
CLI's main only once a command has failed."""
from __future__ import annotations

import os

from xmdata.runtime import storage
from xmdata.runtime.faults import OutOfSpace


def finished_shards(out: str | None) -> int | None:
    """The shards under OUT with their completion record (`<stage>/_done/shard-*.json`, at any depth:
    a release's build folder holds its stages); None for a store, which is not listed for this."""
    if not out or storage.is_url(out) or not os.path.isdir(out):
        return None
    return sum(1 for folder, _, names in os.walk(out) if os.path.basename(folder) == "_done"
               for name in names if name.startswith("shard-") and name.endswith(".json"))


def kept(out: str | None) -> str:
    count = finished_shards(out)
    shards = f"{count} finished shard(s) in {out}" if count is not None else "every finished shard"
    return (f"kept: {shards}, with the memo's stored entries; the same command resumes from them")


def out_of_space_line(exc: OSError, out: str | None) -> str:
    folder = exc.folder if isinstance(exc, OutOfSpace) else exc.filename or out or "?"
    return (f"out of space: {folder}: {exc.strerror or os.strerror(exc.errno)}; {kept(out)} "
            f"once space is freed there")
