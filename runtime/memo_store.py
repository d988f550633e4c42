"""The entry store of one memo (runtime/memo.py): its entry files, what it knows of them, and whether
it can be written. One `MemoStore` travels with the command's `MemoOptions` to every shard it runs
(in the command's process, one for the whole build). A copy sent to another process (a Dask worker's
task) arrives with that process's index of the memo (`RECEIVED`): the tasks a worker runs share what
it has read of the entry files, as they share its models, instead of each reading every file's keys
again (1.85 CPU-s a task at 1 M entries); whether the memo can be written is each copy's own.
"""
from __future__ import annotations

import errno
import logging
import os
import threading

from . import storage
from .memo_keys import CONTEXT_FILE, entry_check, entry_file_name, is_entry_file

log = logging.getLogger("xmdata.memo")
WRITE_ERRORS = {errno.ENOSPC: "the disk is full", errno.EROFS: "read-only file system", errno.EACCES: "not writable",
                errno.EPERM: "not writable", errno.EDQUOT: "over quota"}


class EntryIndex:
    """Which entry file of a memo's context folder holds which keys. Entry files never change, being
    named by their content: a file read once is not read again. Files are read outside its lock (two
    threads may read one file at once; neither waits on the other's folder)."""

    def __init__(self):
        self.lock = threading.Lock()
        self.files: dict[str, dict[str, set[str]]] = {}  # folder -> file name -> keys


class ReceivedIndexes:
    """The entry indexes of one process for the stores sent to it, one per memo location: what a Dask
    worker's tasks share (the process-wide object a pickled store arrives with; no object passed down
    lives longer than a task). At most KEEP locations, the least recently used forgotten: a worker's
    index holds ~180 B an entry (docs/how-to/incremental.md), and dies with the worker."""

    KEEP = 2

    def __init__(self):
        self._lock = threading.Lock()
        self._indexes: dict[str, EntryIndex] = {}  # least recently used first

    def index(self, location: str) -> EntryIndex:
        with self._lock:
            index = self._indexes.pop(location, None) or EntryIndex()
            self._indexes[location] = index
            while len(self._indexes) > self.KEEP:
                del self._indexes[next(iter(self._indexes))]
            return index


RECEIVED = ReceivedIndexes()


def received_store(location: str) -> "MemoStore":
    """A store sent to this process: its own writable flag, this process's index of LOCATION."""
    return MemoStore(location, RECEIVED.index(location))


class MemoStore:
    """The memo at `location`: which entry file of a context folder holds which keys (its `index`; a
    folder is listed per lookup), and whether writing has failed here (read-only, full: said once, then
    only read)."""

    def __init__(self, location: str, index: EntryIndex | None = None):
        self.location = location
        self.index = index if index is not None else EntryIndex()
        # Files that could not be read (truncated, not Parquet, a store's error): this copy's own, so
        # that each task counts them and a file that reads later is read then.
        self._lock = threading.Lock()  # this copy's: its bad files and its writable flag
        self._bad: dict[str, set[str]] = {}
        self._not_writable: str | None = None  # why, once a write failed

    def __reduce__(self):  # to another process: the location only; there it gets that process's index
        return received_store, (self.location,)

    def __repr__(self) -> str:
        return f"MemoStore({self.location!r})"

    def keys_by_file(self, folder: str) -> tuple[dict[str, set[str]], int]:
        """{file: keys} of the folder now, and how many of its files were unreadable (new ones)."""
        names = sorted(n for n in storage.listdir(folder) if is_entry_file(n))
        present, index = set(names), self.index
        with self._lock:
            bad = self._bad.setdefault(folder, set())
            bad &= present  # gone: a file of that name written again is read again
            unreadable = set(bad)
        with index.lock:
            known = index.files.setdefault(folder, {})
            for gone in [n for n in known if n not in present]:  # pruned meanwhile
                del known[gone]
            wanted = [n for n in names if n not in known and n not in unreadable]
        read, failed = {}, set()
        for name in wanted:
            try:
                read[name] = set(storage.read_parquet(storage.join(folder, name), columns=["key"]).column("key").to_pylist())
            except Exception:  # noqa: BLE001 - truncated, not Parquet, gone: computed again, counted
                failed.add(name)
        with self._lock:
            new_bad = len(failed - bad)
            bad |= failed
        with index.lock:
            known.update(read)
            return {n: known[n] for n in names if n in known}, new_bad

    def forget(self, folder: str, name: str) -> None:
        """A file that failed on read: not read again by this store (nor by another copy's index)."""
        with self.index.lock:
            self.index.files.get(folder, {}).pop(name, None)
        with self._lock:
            self._bad.setdefault(folder, set()).add(name)

    def read_entries(self, folder: str, name: str) -> list[tuple[str, bytes, str]]:
        """(key, value, check) of every entry of a file; raises what reading it raises."""
        table = storage.read_parquet(storage.join(folder, name))
        return list(zip(*(table.column(c).to_pylist() for c in ("key", "value", "check"))))

    def touch(self, folder: str, name: str) -> None:
        """Last used: what `memo prune --older-than` reads (a local file's mtime)."""
        path = storage.join(folder, name)
        if not storage.is_url(path):
            try:
                os.utime(storage.local(path))
            except OSError:
                pass

    @property
    def writable(self) -> bool:
        return self._not_writable is None

    def mark_not_writable(self, reason: str) -> None:
        with self._lock:
            if self._not_writable is None:
                self._not_writable = reason
                log.warning("memo %s: %s; its entries are read, new results are not stored", self.location, reason)

    def write(self, folder: str, context: dict, entries: dict[str, bytes]) -> list[str] | None:
        """One entry file of `entries` (key -> encoded value) in a context's folder, its context.json
        first; the keys written, or None when the memo cannot be written (said once, then skipped)."""
        if not self.writable:
            return None
        from .atomic import write_json_atomic, write_parquet_atomic

        name, table = entry_file(entries)
        keys = table.column("key").to_pylist()
        try:
            if not storage.is_url(folder):
                make_private_folder(self.location)
                os.makedirs(folder, mode=0o700, exist_ok=True)
            context_file = storage.join(folder, CONTEXT_FILE)
            if storage.is_url(context_file) or not os.path.exists(context_file):
                write_json_atomic(context, context_file)
            write_parquet_atomic(table, storage.join(folder, name))
        except OSError as exc:
            self.mark_not_writable(WRITE_ERRORS.get(exc.errno, f"{type(exc).__name__}: {exc}"))
            return None
        return keys


def entry_file(entries: dict[str, bytes]):
    """(name, table) of the entry file holding `entries` (key -> encoded value): named by its content."""
    import pyarrow as pa

    keys = sorted(entries)
    table = pa.table({"key": pa.array(keys, pa.string()),
                      "value": pa.array([entries[k] for k in keys], pa.binary()),
                      "check": pa.array([entry_check(k, entries[k]) for k in keys], pa.string())})
    return entry_file_name(entries), table


def make_private_folder(path: str) -> None:
    """The memo's top folder, 0700 when this process makes it (results of a user's runs)."""
    if not os.path.isdir(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)
