"""Keeping the memo small (runtime/memo.py): every entry file with its kind, size and last use, what
the memo holds per kind (`memo stats`), and pruning by use, age, size or all (`memo prune`, with
`--dry-run`: what would go, removing nothing). A pruned entry is computed again when a build needs it."""
from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass

from . import storage
from .memo_keys import CONTEXT_FILE, ENTRY_SUFFIX, RUNS, is_entry_file
from .memo_store import entry_file
from .memo_use import ANY_CONTEXT, RECENT_RUNS

KEEP_RECENT_S = 3600  # `--keep-used-by` leaves entry files written or served this recently


@dataclass(frozen=True)
class EntryFile:
    path: str
    size: int
    used: float  # last written or served (POSIX seconds)
    kind: str


def entry_files(location: str) -> list[EntryFile]:
    """Every entry file of the memo, with its kind (the folder under the memo's top)."""
    found = []
    if storage.is_url(location):
        fs, inner = storage.filesystem(location)
        protocol = location.split("://", 1)[0]
        try:
            listed = fs.find(inner, detail=True)
        except FileNotFoundError:
            return []
        for path, info in listed.items():
            rel = path[len(inner.rstrip("/")) + 1:]
            if rel.endswith(ENTRY_SUFFIX) and not rel.startswith(RUNS + "/"):
                modified = info.get("LastModified") or info.get("mtime") or 0
                used = modified.timestamp() if hasattr(modified, "timestamp") else float(modified)
                found.append(EntryFile(f"{protocol}://{path}", int(info.get("size") or 0), used, rel.split("/")[0]))
        return found
    for folder, _, names in os.walk(location):
        rel = os.path.relpath(folder, location)
        for name in names:
            if is_entry_file(name) and rel.split(os.sep)[0] != RUNS:
                path = os.path.join(folder, name)
                with contextlib.suppress(FileNotFoundError):
                    stat = os.stat(path)
                    found.append(EntryFile(path, stat.st_size, stat.st_mtime, rel.split(os.sep)[0]))
    return found


def stats(location: str) -> dict:
    """Entries and bytes per kind of unit, and the recent runs' hits (newest first)."""
    kinds: dict[str, dict] = {}
    for entry in entry_files(location):
        row = kinds.setdefault(entry.kind, {"contexts": set(), "files": 0, "entries": 0, "bytes": 0})
        row["contexts"].add(entry.path.rsplit("/", 1)[0])  # the context's folder
        row["files"] += 1
        row["bytes"] += entry.size
        try:
            row["entries"] += storage.parquet_rows(entry.path)
        except Exception:  # noqa: BLE001 - a torn file: counted as a file, holds nothing servable
            row["unreadable"] = row.get("unreadable", 0) + 1
    for row in kinds.values():
        row["contexts"] = len(row["contexts"])
    runs = []
    for name in sorted(storage.listdir(storage.join(location, RUNS)), reverse=True)[:RECENT_RUNS]:
        if name.endswith(".json") and not name.startswith("."):
            with contextlib.suppress(OSError, ValueError):
                runs.append(json.loads(storage.read_text(storage.join(location, RUNS, name))))
    return {"location": location, "kinds": dict(sorted(kinds.items())), "recent_runs": runs}


def prune(location: str, older_than_days: float | None = None, max_bytes: int | None = None,
          everything: bool = False, now: float | None = None,
          keep: dict[tuple[str, str], set[str]] | None = None, dry_run: bool = False) -> dict:
    """Remove entries not used by the outputs `keep` was read from (`used_by`; a file holding some of
    them is written again with those only), then entry files unused for `older_than_days` (a hit
    counts as a use), then the least recently used until the memo holds at most `max_bytes`, or all
    (`everything`). A pruned entry is computed again by the next build that needs it. Returns what
    was removed and what is left; `dry_run`: what would be, removing and writing nothing, with what
    would go per kind (`going`: files, entries and bytes)."""
    now = time.time() if now is None else now
    going: dict[str, dict[str, int]] = {}
    rewritten: dict[str, tuple[EntryFile | None, int]] = {}  # a dry run's: path -> (what keep leaves, its entries)
    removed_entries = _keep_only(location, keep, going, rewritten if dry_run else None) if keep is not None else 0
    files = sorted(entry_files(location), key=lambda e: e.used)
    if dry_run:  # the memo as keep would have left it
        files = [after for e in files if (after := rewritten.get(e.path, (e, 0))[0]) is not None]
    doomed = set()
    for entry in files:
        if everything or (older_than_days is not None and now - entry.used > older_than_days * 86400):
            doomed.add(entry.path)
    if max_bytes is not None:
        left = sum(e.size for e in files if e.path not in doomed)
        for entry in files:  # least recently used first
            if left <= max_bytes:
                break
            if entry.path not in doomed:
                doomed.add(entry.path)
                left -= entry.size
    kept = [e for e in files if e.path not in doomed]
    if dry_run:
        counts = {after.path: n for after, n in rewritten.values() if after is not None}
        for entry in (e for e in files if e.path in doomed):
            _add_going(going, entry.kind, 1, counts[entry.path] if entry.path in counts else _rows(entry), entry.size)
        done = {"dry_run": True, "removed_files": len(doomed),
                "removed_bytes": sum(e.size for e in files if e.path in doomed), "kept_files": len(kept),
                "kept_bytes": sum(e.size for e in kept), "going": dict(sorted(going.items()))}
        return {**done, "removed_entries": removed_entries} if keep is not None else done
    removed_bytes = 0
    for entry in files:
        if entry.path in doomed:
            with contextlib.suppress(FileNotFoundError):
                storage.remove(entry.path)
                removed_bytes += entry.size
    runs = storage.join(location, RUNS)
    for name in sorted(storage.listdir(runs))[:None if everything else -RECENT_RUNS]:  # the newest kept
        with contextlib.suppress(FileNotFoundError):
            storage.remove(storage.join(runs, name))
    if not storage.is_url(location):
        _remove_stray_and_empty(location, now)
    done = {"removed_files": len(doomed), "removed_bytes": removed_bytes, "kept_files": len(kept),
            "kept_bytes": sum(e.size for e in kept)}
    return {**done, "removed_entries": removed_entries} if keep is not None else done



def _rows(entry: EntryFile) -> int:
    """The entries an entry file holds; 0 for a torn one (it serves nothing)."""
    try:
        return storage.parquet_rows(entry.path)
    except Exception:  # noqa: BLE001 - as stats counts a torn file
        return 0


def _add_going(going: dict, kind: str, files: int, entries: int, nbytes: int) -> None:
    row = going.setdefault(kind, {"files": 0, "entries": 0, "bytes": 0})
    row["files"], row["entries"], row["bytes"] = row["files"] + files, row["entries"] + entries, row["bytes"] + nbytes


def _keep_only(location: str, keep: dict[tuple[str, str], set[str]], going: dict,
               rewritten: dict | None = None) -> int:
    """Entries no kept output used, removed: a file of none of them deleted, a file of some written
    again with those only (named by its new content) before the old one goes. Returns how many, and
    adds them to `going` per kind (a rewritten file: the bytes it shrinks by). `rewritten`: a dry run,
    writing nothing: {old path: (the file left, None if none; its entries)} instead."""
    import pyarrow as pa

    from .atomic import parquet_bytes, write_parquet_atomic

    removed, recent = 0, time.time() - KEEP_RECENT_S
    for entry in entry_files(location):
        if entry.used > recent:  # written or served within the hour: a build running now may need it
            continue
        folder = entry.path.rsplit("/", 1)[0]  # MEMO/<kind>/<ab>/<context>/<file>
        wanted = keep.get((entry.kind, folder.rsplit("/", 1)[-1]), set()) | keep.get((entry.kind, ANY_CONTEXT), set())
        try:
            table = storage.read_parquet(entry.path)
        except pa.ArrowInvalid:  # a torn file serves nothing: it goes
            table = None
        except OSError:  # not readable now (a store's timeout, permissions): kept, never removed on a guess
            continue
        keys = table.column("key").to_pylist() if table is not None else []
        held = [i for i, key in enumerate(keys) if key in wanted]
        if len(held) == len(keys) and table is not None:
            continue
        left, left_size = None, 0
        if held:
            values = table.column("value").to_pylist()
            name, part = entry_file({keys[i]: values[i] for i in held})
            if rewritten is None:
                write_parquet_atomic(part, storage.join(folder, name))
            else:
                left_size = len(parquet_bytes(part))
                left = EntryFile(storage.join(folder, name), left_size, time.time(), entry.kind)
        if rewritten is None:
            with contextlib.suppress(FileNotFoundError):
                storage.remove(entry.path)
        else:
            rewritten[entry.path] = (left, len(held))
        _add_going(going, entry.kind, 0 if held else 1, len(keys) - len(held), entry.size - left_size)
        removed += len(keys) - len(held)
    return removed


def _remove_stray_and_empty(location: str, now: float, stray_after_s: float = 3600) -> None:
    """Temp files of writes a kill interrupted (older than an hour: no live writer takes that long
    for one batch), and context folders left without entries."""
    for folder, _, names in os.walk(location, topdown=False):
        for name in names:
            path = os.path.join(folder, name)
            if name.startswith(".tmp-") and name.endswith(".part"):
                with contextlib.suppress(FileNotFoundError):
                    if now - os.stat(path).st_mtime > stray_after_s:
                        os.unlink(path)
        if folder != location and os.path.basename(folder) != RUNS:
            left = os.listdir(folder)
            if left in ([], [CONTEXT_FILE]):
                with contextlib.suppress(OSError):
                    for name in left:
                        os.unlink(os.path.join(folder, name))
                    os.rmdir(folder)
