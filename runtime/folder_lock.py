"""One writer per folder, on filelock: FOLDER/.xmdata-lock is held with `flock` by the writer, and
FOLDER/.xmdata-lock.holder beside it names that writer (pid, host, command, since when). A second
writer refuses in one line (or waits, `waiting_for_locks`).

The lock is `filelock.FileLock(thread_local=False, fallback_to_soft=False)`: the kernel (or the
file system's lock manager, on a shared one) drops it when its holder ends, however it ends, so a
killed writer's lock is simply free, and a writer is live exactly while its lock cannot be taken.
A file system without `flock` is refused in one line (`NoFlock`), never silently soft-locked:
`XMDATA_LOCK=lease` chooses filelock's `SoftFileLease` instead, a claim the holder renews and a
contender takes once it is XMDATA_LOCK_LEASE_S old (or at once, on the holder's own host, when its
process is gone). Every writer of one folder must use the same kind. docs/how-to/releases.md says
what `flock` does on a local disk, NFS, Lustre and GPFS, with a holder on another host.

The holder record is written whole (runtime/atomic.py) after the lock is taken and removed before it
is let go; the lock file is unlinked while still held, and a taker checks that the file it holds is
still the one at the path (`_still_there`), so a writer waiting on an unlinked file takes the new
one instead. A lock file or holder record that is not ours is refused and kept (`ForeignLock`).

A lock covers its folder and everything under it, and is re-entrant in its process: a flow called
by a flow (a release's stages) that holds the folder or one above it takes nothing more. Folders on
an object store (s3://, gs://, az://) are not locked: they have no `flock`, and fsspec exposes
neither a conditional delete nor a rename there to build a lease on; their writes are whole or
absent and nothing sweeps them (runtime/atomic.py). Prefect's per-deployment concurrency limit
(prefect.yaml, `xmdata serve`) still keeps a schedule from overlapping itself there.
"""
from __future__ import annotations

import contextvars
import json
import os
import shutil
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Iterator

from . import settings, storage
from .atomic import TEMP_FOLDER_PREFIX, write_bytes_atomic
from .lock_files import (EARLIER_FORMAT, FORMAT, HOLDER_NAME, LOCK_NAME, FolderBusy, ForeignLock, Holder,  # noqa: F401
                         NoFlock, check_lock_file, clear, held_by_another, holder_path, lock_path,
                         node_local_flock, read_holder, take_file, this_process)
from xmdata.schemas.contract import ContractError

POLL_S = 0.5  # between looks at a busy folder, with --wait-lock
UNNAMED_S = 1.0  # a held lock whose holder has not named itself yet is looked at again this long


@dataclass
class _Held:
    holder: Holder
    count: int
    lock: object  # the filelock lock
    file: tuple[int, int] | None  # with flock: the lock file held (device, inode)


class _Holdings:
    """What this process holds: folder (real path) -> its lock; a forked child holds nothing its parent held."""

    def __init__(self):
        self.pid, self.held = os.getpid(), {}

    def current(self) -> dict[str, _Held]:
        if self.pid != os.getpid():
            self.pid, self.held = os.getpid(), {}
        return self.held


HOLDINGS = _Holdings()
_guard = threading.RLock()
_wait_s: contextvars.ContextVar[float] = contextvars.ContextVar("xmdata_wait_lock", default=0.0)


def _holding() -> dict[str, _Held]:
    return HOLDINGS.current()


def held_here(folder: str) -> str | None:
    """The folder, FOLDER or one above it, whose lock this process holds; None if none."""
    path = os.path.realpath(storage.local(folder))
    with _guard:
        holding = _holding()
        while True:
            if path in holding:
                return path
            parent = os.path.dirname(path)
            if parent == path:
                return None
            path = parent


def written_by_another(folder: str, above: bool = False) -> bool:
    """Whether a live writer other than this process holds FOLDER (with ABOVE: or a folder above it):
    a sweep leaves such a folder alone, and one whose lock file is not ours (nothing is deleted)."""
    path = os.path.realpath(storage.local(folder))
    while True:
        try:
            if path not in _holding() and held_by_another(path):
                return True
        except ForeignLock:
            return True
        parent = os.path.dirname(path)
        if not above or parent == path:
            return False
        path = parent


@contextmanager
def waiting_for_locks(seconds: float) -> Iterator[None]:
    """A busy folder is waited for this long (--wait-lock), in this context, before it is refused."""
    token = _wait_s.set(seconds)
    try:
        yield
    finally:
        _wait_s.reset(token)


@contextmanager
def one_writer(folder: str, command: str | None = None) -> Iterator[bool]:
    """Hold FOLDER's lock for the block; yields whether it was taken now (False: this process held
    it or a folder above it already, or FOLDER is on an object store). Taken now, the temp files
    left in FOLDER are swept (`remove_stray_temp_files`) before the block: no other live writer
    holds it and this one has written nothing yet, so every temp file there is a gone writer's.
    A flow called inside (re-entrant) sweeps nothing: its caller's parts may be writing. Folders
    made for the lock alone are removed with it: a refused or failed run leaves no empty folder."""
    if storage.is_url(folder):
        yield False
        return
    path = os.path.realpath(storage.local(folder))
    made = _missing_from(path)
    try:
        held, fresh = _take(path, command)
    except BaseException:
        _remove_empty(path, made)
        raise
    try:
        yield fresh
    finally:
        _release(held)
        if fresh:
            _remove_empty(path, made)


def _missing_from(path: str) -> str | None:
    """The highest folder of PATH that does not exist yet (None: PATH exists)."""
    missing = None
    while not os.path.isdir(path):
        missing, path = path, os.path.dirname(path)
    return missing


def _remove_empty(path: str, made: str | None) -> None:
    """PATH and the folders above it up to MADE, those of them still empty."""
    while made and path.startswith(made):
        try:
            os.rmdir(path)
        except OSError:
            return
        if path == made:
            return
        path = os.path.dirname(path)


def _take(path: str, command: str | None) -> tuple[str, bool]:
    """(the folder whose lock this process now holds, whether taken now): a folder this process holds
    already (PATH or one above it) is taken again; else PATH's lock, waited for up to --wait-lock."""
    deadline = time.monotonic() + _wait_s.get()
    unnamed_until = time.monotonic() + UNNAMED_S
    while True:
        with _guard:  # one thread of this process at a time: a second takes it again, never refused by the first
            covering = held_here(path)
            if covering:
                _holding()[covering].count += 1
                return covering, False
            busy = _above(path)
            if busy is None:
                busy = path
                os.makedirs(path, exist_ok=True)
                if _try_take(path, command):
                    remove_stray_temp_files(path)
                    return path, True
            holder = read_holder(busy)
        if holder is None and time.monotonic() < unnamed_until:
            _pause(0.05)  # taken an instant ago (its holder is writing its name), or looked at by a sweep
            continue
        left = deadline - time.monotonic()
        if left <= 0:
            waited = f" after waiting {_wait_s.get():g} s" if _wait_s.get() else ""
            who = holder.named() if holder else "a process that has not named itself (no holder record beside its lock)"
            raise FolderBusy(f"{busy} is being written by {who}{waited}; wait with --wait-lock "
                             f"SECONDS or `xmdata unlock {busy}` if it is gone")
        _pause(min(POLL_S, left))


def _above(path: str) -> str | None:
    """A folder above PATH that a live writer holds (a lock covers what is under it)."""
    folder = os.path.dirname(path)
    while folder != os.path.dirname(folder):
        try:
            if held_by_another(folder):
                return folder
        except ForeignLock:
            raise
        except (ContractError, PermissionError):  # a folder above that we may not read holds no lock of ours
            pass
        folder = os.path.dirname(folder)
    return None


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _try_take(path: str, command: str | None) -> bool:
    """Take PATH's lock and name this process its holder (True), or False while another holds it. Under `_guard`."""
    existed = check_lock_file(path)
    previous = read_holder(path)  # a record not ours is refused before anything is taken
    if settings.LOCK.get() == "flock" and (reason := node_local_flock(path)):
        raise NoFlock(f"{path}: {reason}, so a writer on another host would not see its lock; choose the lease "
                      f"instead with XMDATA_LOCK=lease (every writer of the folder alike)")
    try:
        got = take_file(path)
    except NoFlock:
        _remove_own_placeholder(path, existed)
        raise
    if got is None:
        return False
    lock, file = got
    try:
        previous = read_holder(path)  # again, now that no one else may write it
        mine = this_process(command)
        write_bytes_atomic((json.dumps({"format": FORMAT, **asdict(mine)}, indent=1) + "\n").encode(),
                           holder_path(path), sync=False)
    except BaseException:
        lock.release()
        raise
    if previous is not None:
        print(f"xmdata: {path}: took over the lock of {previous.named()}: it is gone (its lock was free)",
              file=sys.stderr, flush=True)
    _holding()[path] = _Held(mine, 1, lock, file)
    return True


def _remove_own_placeholder(path: str, existed: bool) -> None:
    """The empty lock file filelock made before finding no flock (it keeps it when it does not fall back)."""
    try:
        if not existed and os.path.getsize(lock_path(path)) == 0:
            os.unlink(lock_path(path))
    except OSError:
        pass


def _release(path: str) -> None:
    with _guard:
        held = _holding().get(path)
        if held is None:
            return
        held.count -= 1
        if held.count:
            return
        del _holding()[path]
        clear(path, held.holder, held.lock, held.file)


def remove_stray_temp_files(root: str) -> int:
    """Delete temp files and folders a killed run left behind (they never became outputs); returns how many.

    Only where no live writer but this process holds the lock (runtime/folder_lock.py): nothing when
    ROOT or a folder above it is another's, and no folder under ROOT that another holds. A writer is
    live while its lock cannot be taken (flock: the kernel, or a shared file system's lock manager,
    frees it when the writer ends, on any host), so under a lock of this process the temp files are a
    gone writer's (`one_writer` sweeps when it takes a lock, before the first write) or this run's own
    whose writers have all returned (run_shards, at a stage's end)."""
    if storage.is_url(root):  # uploads are whole or absent: nothing half-written to remove
        return 0
    removed, top = 0, storage.local(root)
    if written_by_another(top, above=True):
        return 0
    for folder, subfolders, files in os.walk(top):
        if folder != top and {LOCK_NAME, HOLDER_NAME} & {*files, *subfolders} and written_by_another(folder):
            subfolders.clear()  # another writer's folder: its temp files are live
            continue
        if folder == top:  # local_temp_folder's folders, only at the top: never a user's
            for name in [d for d in subfolders if d.startswith(TEMP_FOLDER_PREFIX)]:
                subfolders.remove(name)
                if not os.path.islink(os.path.join(folder, name)):
                    shutil.rmtree(os.path.join(folder, name))
                    removed += 1
        for name in files:
            if name.startswith(".tmp-") and name.endswith(".part"):
                os.unlink(os.path.join(folder, name))
                removed += 1
    return removed
