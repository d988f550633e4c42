"""The files of a folder's lock and how they are locked (runtime/folder_lock.py holds them for a writer):
FOLDER/.xmdata-lock, held with filelock (`flock`, or with XMDATA_LOCK=lease a SoftFileLease), and
FOLDER/.xmdata-lock.holder beside it, naming the writer; reading them, telling a file that is not ours,
looking whether another process holds the lock, and what a folder's mount says of `flock`'s reach.
"""
from __future__ import annotations

import errno
import json
import os
import re
import shlex
import socket
import stat
import sys
import time
from dataclasses import dataclass

from . import settings
from xmdata.schemas.contract import ContractError

LOCK_NAME = ".xmdata-lock"  # the file locked: empty with flock, filelock's marker with a lease
HOLDER_NAME = LOCK_NAME + ".holder"  # who holds it
FORMAT = "xmdata folder lock holder 2"
EARLIER_FORMAT = "xmdata folder lock 1"  # before filelock: the holder was the lock file itself
MOUNTS = "/proc/self/mountinfo"  # where a folder's file system and its mount options are read


class FolderBusy(ContractError):
    """A live writer holds the folder (exit 2 on the command line, as a refused input)."""


class ForeignLock(ContractError):
    """FOLDER/.xmdata-lock (or .holder) is not a file xmdata wrote: refused, and left where it is."""


class NoFlock(ContractError):
    """`flock` cannot serve the folder (missing, or kept on each host): refused, with how to choose the lease."""


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
    """The file locked is not the one at its path now (its last holder unlinked it as we took it)."""


def _identity(path: str) -> tuple[int, int] | None:
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    return info.st_dev, info.st_ino


def _still_there(lock: str, fd: int, taken: dict | None) -> None:
    """filelock's on_acquired: the file held must be the one at LOCK still (one its last holder unlinked as
    we took it guards no name; on NFS an unlinked open file is renamed, so its link count cannot tell)."""
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
    """Whether a live writer holds FOLDER's lock (not one above it; this process's own holds count too:
    its caller asks folder_lock first). With flock, a try on a descriptor of its own; with the lease, a try
    at the lease, let go at once."""
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


def take_file(path: str):
    """One try at PATH's lock: (the lock, with flock the file it holds), or None while another holds it.
    Tried again at once when the file it got was unlinked by its last holder as it took it."""
    for _ in range(100):
        taken: dict = {}
        lock = _new_lock(path, taken)
        try:
            return (lock, taken.get("file")) if _try(path, lock) else None
        except _Moved:
            continue
    raise FolderBusy(f"{path}: its lock kept changing hands; try again")


def take_to_clear(folder: str) -> bool:
    """`xmdata unlock`: take FOLDER's free lock, remove its files, let it go (True); False while it is held."""
    got = take_file(folder)
    return got is not None and clear(folder, None, *got) is None


def clear_files(folder: str) -> None:
    """`xmdata unlock --force`: FOLDER's lock file and holder record go while their writer holds the old file."""
    for path in (holder_path(folder), lock_path(folder)):
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass


