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
import errno
import json
import os
import re
import shlex
import shutil
import socket
import stat
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Iterator

from . import settings, storage
from .atomic import TEMP_FOLDER_PREFIX, write_bytes_atomic
from xmdata.schemas.contract import ContractError

LOCK_NAME = ".xmdata-lock"  # the file locked: empty with flock, filelock's marker with a lease
HOLDER_NAME = LOCK_NAME + ".holder"  # who holds it
FORMAT = "xmdata folder lock holder 2"
EARLIER_FORMAT = "xmdata folder lock 1"  # before filelock: the holder was the lock file itself
POLL_S = 0.5  # between looks at a busy folder, with --wait-lock
MOUNTS = "/proc/self/mountinfo"  # where a folder's file system and its mount options are read
UNNAMED_S = 1.0  # a held lock whose holder has not named itself yet is looked at again this long


class FolderBusy(ContractError):
    """A live writer holds the folder (exit 2 on the command line, as a refused input)."""


class ForeignLock(ContractError):
    """FOLDER/.xmdata-lock (or .holder) is not a file xmdata wrote: refused, and left where it is."""


class NoFlock(ContractError):
    """The folder's file system has no `flock`: refused, with how to choose the lease instead."""


@dataclass(frozen=True)
class Holder:
    pid: int
    host: str
    since: float  # seconds since the epoch
    command: str

    def named(self) -> str:
        where = "" if self.host == socket.gethostname() else f" on host {self.host}"
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since))
        return f"pid {self.pid}{where} (command {self.command}, since {when})"


def this_process(command: str | None = None) -> Holder:
    return Holder(os.getpid(), socket.gethostname(), round(time.time(), 3), command or _command_line())


def _command_line(limit: int = 200) -> str:
    """This process's command line, with the Prefect flow run it is (a UI or scheduled run's argv says little)."""
    words = [os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python", *sys.argv[1:]]
    line = shlex.join(words)
    line = line if len(line) <= limit else line[:limit - 1] + "…"
    if "prefect" in sys.modules:  # never imported for this: `xmdata unlock` stays light
        from prefect.runtime import flow_run

        if flow_run.id:
            line += f", Prefect flow run {flow_run.name} {flow_run.id}"
    return line


def lock_path(folder: str) -> str:
    return os.path.join(folder, LOCK_NAME)


def holder_path(folder: str) -> str:
    return os.path.join(folder, HOLDER_NAME)


def _foreign(folder: str, path: str, what: str = "is not an xmdata lock file") -> ForeignLock:
    return ForeignLock(f"{folder}: {path} {what}; nothing was deleted (remove it yourself if no writer uses it)")


def check_lock_file(folder: str) -> bool:
    """Whether FOLDER has a lock file; ForeignLock when the file there is not one xmdata's lock kind makes
    (with flock: an empty regular file; a folder, a link or any content is not)."""
    path = lock_path(folder)
    try:
        info = os.lstat(path)
    except (FileNotFoundError, NotADirectoryError):
        return False
    if stat.S_ISDIR(info.st_mode):
        raise _foreign(folder, path, "is a folder, not an xmdata lock")
    if not stat.S_ISREG(info.st_mode):
        raise _foreign(folder, path)
    if info.st_size and settings.LOCK.get() == "flock":
        try:
            with open(path, "rb") as f:
                data = json.loads(f.read(65536))
        except (OSError, ValueError):
            data = None
        if isinstance(data, dict) and data.get("format") == EARLIER_FORMAT:
            raise _foreign(folder, path, f"is the lock of an earlier xmdata (pid {data.get('pid')} on host "
                                         f"{data.get('host')}), which this one cannot tell alive")
        raise _foreign(folder, path)  # with flock ours is empty (a lease's marker: XMDATA_LOCK=lease here)
    return True


def read_holder(folder: str) -> Holder | None:
    """Who last took FOLDER's lock (its record; whether it still holds it is `held_by_another`), None when
    no record is there. ForeignLock when the lock file or the record is not one xmdata wrote."""
    check_lock_file(folder)
    path = holder_path(folder)
    try:
        with open(path, "rb") as f:
            text = f.read()
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError as exc:
        raise ContractError(f"{folder}: cannot read its lock's holder {path}: {exc.strerror}") from None
    except IsADirectoryError:
        raise _foreign(folder, path, "is a folder, not an xmdata lock's holder") from None
    if not text:
        return None  # written unsynced (the lock is the truth, the record its name): a crash may leave it empty
    try:
        data = json.loads(text)
        if data.pop("format") != FORMAT:
            raise ValueError("another format")
        return Holder(**data)
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise _foreign(folder, path) from None


def _new_lock(path: str, taken: dict | None = None):
    """The filelock lock of folder PATH, of the kind XMDATA_LOCK chooses; with flock, TAKEN gets the
    identity of the file it holds (`_still_there`)."""
    if settings.LOCK.get() == "lease":
        from filelock import SoftFileLease

        return SoftFileLease(lock_path(path), lease_duration=settings.LOCK_LEASE_S.get(), thread_local=False)
    from filelock import FileLock

    return FileLock(lock_path(path), thread_local=False, fallback_to_soft=False,
                    on_acquired=lambda fd: _still_there(lock_path(path), fd, taken))


class _Moved(Exception):
    """The file locked is no longer the one at its path (unlinked by its last holder while we waited on it)."""


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def _still_there(lock: str, fd: int, taken: dict | None) -> None:
    """filelock's on_acquired: the file now held must be the one at LOCK (a file its last holder unlinked
    as we took it guards no name; on NFS an unlinked open file is renamed, not gone, so a link count
    cannot tell)."""
    held = os.fstat(fd)
    if _identity(lock) != (held.st_dev, held.st_ino):
        raise _Moved(lock)  # filelock lets go of it; the caller tries again
    if taken is not None:
        taken["file"] = (held.st_dev, held.st_ino)


def _no_flock(folder: str) -> NoFlock:
    return NoFlock(f"{folder}: its file system does not support flock, so a lock there would not hold; choose "
                   f"the lease instead with XMDATA_LOCK=lease (every writer of the folder alike; it is taken over "
                   f"once not renewed for XMDATA_LOCK_LEASE_S={settings.LOCK_LEASE_S.get():g} s)")


def node_local_flock(path: str, mountinfo: str | None = None) -> str | None:
    """Why `flock` on PATH's file system stays on this host, so a writer on another host would not see
    the lock (None: it reaches as far as the file system does, as far as this host can tell). From the
    mount PATH is on (/proc/self/mountinfo, or MOUNTINFO's text): NFS with local_lock=flock or all,
    Lustre with localflock, GPFS (its flock measured node-local; docs/how-to/releases.md)."""
    if mountinfo is None:
        try:
            with open(MOUNTS, encoding="utf-8", errors="surrogateescape") as f:
                mountinfo = f.read()
        except OSError:
            return None
    best = None
    for line in mountinfo.splitlines():
        mount, _, fs = line.partition(" - ")
        mount, fs = mount.split(), fs.split()
        if len(mount) < 6 or len(fs) < 3:
            continue
        point = re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), mount[4])  # \040: a space
        if (path == point or path.startswith(point.rstrip("/") + "/")) and (best is None or len(point) >= len(best[0])):
            best = point, fs[0], {*mount[5].split(","), *fs[2].split(",")}
    if best is None:
        return None
    point, kind, options = best
    local = sorted(options & {"local_lock=flock", "local_lock=all"})
    if kind.startswith("nfs") and local:
        return f"it is on NFS mounted at {point} with {local[0]}, which keeps flock on each host (nfs(5))"
    if kind == "lustre" and "localflock" in options:
        return f"it is on Lustre mounted at {point} with localflock, which keeps flock on each client (mount.lustre(8))"
    if kind == "gpfs":
        return f"it is on GPFS ({point}), whose flock has been measured node-local"
    return None


def _try(folder: str, lock) -> bool:
    """One attempt at LOCK, FOLDER's: whether it is held now."""
    from filelock import Timeout

    try:
        lock.acquire(blocking=False)
    except Timeout:
        return False
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            raise _no_flock(folder) from None
        raise
    return True


def held_by_another(folder: str) -> bool:
    """Whether a live writer other than this process holds FOLDER's lock (not one above it): a look that
    takes the lock for an instant and lets it go, or, with flock, takes it on a descriptor of its own."""
    if os.path.realpath(folder) in _holding():
        return False
    read_holder(folder)  # a lock file or holder record not ours: ForeignLock
    if not os.path.lexists(lock_path(folder)):
        return False
    if settings.LOCK.get() == "lease":
        lock = _new_lock(folder)
        if not _try(folder, lock):
            return True
        lock.release()
        return False
    from filelock import lock_descriptor, unlock_descriptor

    try:
        fd = os.open(lock_path(folder), os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except FileNotFoundError:
        return False  # let go since we looked
    except PermissionError:  # a folder we may only read: a shared look is refused by a writer's lock too
        fd = os.open(lock_path(folder), os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        if not lock_descriptor(fd, blocking=False):
            return True
        unlock_descriptor(fd)
        return False
    except OSError as exc:
        if exc.errno == errno.ENOSYS:
            raise _no_flock(folder) from None
        raise
    finally:
        os.close(fd)


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
            if held_by_another(path):
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
    for _ in range(100):  # each turn: the file we got was unlinked by its last holder as we took it
        taken: dict = {}
        lock = _new_lock(path, taken)
        try:
            if not _try(path, lock):
                return False
        except NoFlock:
            _remove_own_placeholder(path, existed)
            raise
        except _Moved:
            continue
        break
    else:
        raise FolderBusy(f"{path}: its lock kept changing hands; try again")
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
    _holding()[path] = _Held(mine, 1, lock, taken.get("file"))
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


def clear(path: str, holder: Holder | None, lock, file: tuple[int, int] | None) -> None:
    """Remove PATH's holder record (if still HOLDER's) and, with flock, its lock file (if still FILE, the one
    held: not a new writer's after `xmdata unlock --force`), then let LOCK go. Unlinked while held, so a
    writer waiting on the old file takes a new one (`_still_there`)."""
    try:
        if holder is None or read_holder(path) == holder:
            os.unlink(holder_path(path))
    except (OSError, ContractError):
        pass
    if file is not None and _identity(lock_path(path)) == file:
        try:
            os.unlink(lock_path(path))
        except OSError:
            pass
    lock.release()


def take_to_clear(folder: str) -> bool:
    """`xmdata unlock`: take FOLDER's free lock, remove its files, let it go (True); False while it is held."""
    for _ in range(100):
        taken: dict = {}
        lock = _new_lock(folder, taken)
        try:
            if not _try(folder, lock):
                return False
        except _Moved:
            continue
        clear(folder, None, lock, taken.get("file"))
        return True
    return False


def clear_files(folder: str) -> None:
    """`xmdata unlock --force`: FOLDER's lock file and holder record go while their writer holds the old file."""
    for path in (holder_path(folder), lock_path(folder)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


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
