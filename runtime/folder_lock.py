"""One writer per folder: a lock file inside the folder names its holder; a second writer refuses
in one line (or waits, `waiting_for_locks`), a gone holder's lock is taken over, with a line saying so.

The file, FOLDER/.xmdata-lock, is JSON: a random token, the holder's pid and that process's start
time (/proc/PID/stat, so a reused pid is not mistaken for the holder), the boot, host, when it was
taken and the command. It is written whole to a private name, then linked to its name: `os.link`
fails if the name exists, so exactly one writer gets it and no reader sees half a file. A holder
is gone when, on this host and boot, no process has its pid and start time; on another host (a
shared filesystem), when its lease — the file's mtime, refreshed from a thread while it is held —
is older than XMDATA_LOCK_LEASE_S. A gone holder's file is renamed to a name of the taker's own
(one taker can move it; a taker that moved a live lock it raced for puts it back), then the
taker's own is linked in its place. A file there that is not one of ours is refused and kept.

A lock covers its folder and everything under it, and is re-entrant in its process: a flow called
by a flow (a release's stages) that holds the folder or one above it takes nothing more. Folders on
an object store (s3://, gs://, az://) are not locked: fsspec exposes neither a conditional delete nor
a rename there, so a stale lock could not be taken over atomically; their writes are whole or
absent and nothing sweeps them (runtime/atomic.py). Prefect's per-deployment concurrency limit
(prefect.yaml, `xmdata serve`) still keeps a schedule from overlapping itself there.
"""
from __future__ import annotations

import contextvars
import json
import os
import shutil
import shlex
import socket
import sys
import threading
import time
import uuid
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Iterator

from . import settings, storage
from .atomic import TEMP_FOLDER_PREFIX
from xmdata.schemas.contract import ContractError

LOCK_NAME = ".xmdata-lock"
FORMAT = "xmdata folder lock 1"
POLL_S = 0.5  # between looks at a busy folder, with --wait-lock


class FolderBusy(ContractError):
    """A live writer holds the folder (exit 2 on the command line, as a refused input)."""


class ForeignLock(ContractError):
    """FOLDER/.xmdata-lock is not a lock xmdata wrote: refused, and left where it is."""


@dataclass(frozen=True)
class Holder:
    token: str
    pid: int
    pid_start: int | None  # clock ticks after boot (/proc/PID/stat field 22); None where there is no /proc
    boot: str | None
    host: str
    since: float  # seconds since the epoch
    command: str

    def named(self) -> str:
        where = "" if self.host == socket.gethostname() else f" on host {self.host}"
        when = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(self.since))
        return f"pid {self.pid}{where} (command {self.command}, since {when})"


def this_process(command: str | None = None) -> Holder:
    return Holder(uuid.uuid4().hex, os.getpid(), process_start(os.getpid()), _boot(), socket.gethostname(),
                  round(time.time(), 3), command or _command_line())


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


def process_start(pid: int) -> int | None:
    """The start time of process PID in clock ticks after boot; None when there is no such process
    (or no /proc to ask: then the pid alone decides)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            text = f.read()
    except FileNotFoundError:
        return None if os.path.isdir("/proc/self") or not _pid_exists(pid) else -1
    except OSError:
        return -1  # exists, not ours to read: alive
    return int(text[text.rindex(")") + 2:].split()[19])  # after the name, which may hold spaces


def _pid_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _boot() -> str | None:
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            return f.read().strip()
    except OSError:
        return None


def lock_path(folder: str) -> str:
    return os.path.join(folder, LOCK_NAME)


def read_holder(folder: str) -> tuple[Holder, float] | None:
    """(the holder, the lease's age in seconds) of FOLDER's lock; None when there is none.
    ForeignLock when a file is there that xmdata did not write."""
    path = lock_path(folder)
    try:
        with open(path, "rb") as f:
            text, age = f.read(), time.time() - os.fstat(f.fileno()).st_mtime
    except (FileNotFoundError, NotADirectoryError):
        return None
    except PermissionError as exc:
        raise ContractError(f"{folder}: cannot read its lock {path}: {exc.strerror}") from None
    except IsADirectoryError:
        raise ForeignLock(f"{folder}: {path} is a folder, not an xmdata lock; nothing was deleted "
                          f"(remove it yourself if no writer uses it)") from None
    try:
        data = json.loads(text)
        if data.pop("format") != FORMAT:
            raise ValueError("another format")
        return Holder(**data), age
    except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
        raise ForeignLock(f"{folder}: {path} is not an xmdata lock file; nothing was deleted "
                          f"(remove it yourself if no writer uses it)") from None


def gone(holder: Holder, age: float) -> str | None:
    """Why HOLDER no longer writes (the line a takeover prints), or None while it may."""
    if holder.host == socket.gethostname() and holder.boot == _boot():
        start = process_start(holder.pid)
        if start is None:
            return f"no process {holder.pid} is running"
        if holder.pid_start is not None and start not in (-1, holder.pid_start):
            return f"pid {holder.pid} is another process now"
        return None
    if holder.host == socket.gethostname():
        return "this host has restarted since"
    lease = settings.LOCK_LEASE_S.get()
    if age > lease:
        return f"its lease was not refreshed for {age:.0f} s (XMDATA_LOCK_LEASE_S={lease:g})"
    return None


@dataclass
class _Held:
    holder: Holder
    count: int
    stop: threading.Event


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
        if path not in _holding():
            try:
                found = read_holder(path)
            except ForeignLock:
                return True
            if found and gone(*found) is None:
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
    while True:
        with _guard:  # one thread of this process at a time: a second takes it again, never refused by the first
            covering = held_here(path)
            if covering:
                _holding()[covering].count += 1
                return covering, False
            busy, holder = _above(path)
            if holder is None:
                os.makedirs(path, exist_ok=True)
                busy, holder = path, _try_take(path, command)
            if holder is None:
                remove_stray_temp_files(path)
                return path, True
        left = deadline - time.monotonic()
        if left <= 0:
            waited = f" after waiting {_wait_s.get():g} s" if _wait_s.get() else ""
            raise FolderBusy(f"{busy} is being written by {holder.named()}{waited}; wait with --wait-lock "
                             f"SECONDS or `xmdata unlock {busy}` if it is gone")
        _pause(min(POLL_S, left))


def _above(path: str) -> tuple[str, Holder | None]:
    """A folder above PATH that a live writer holds, and that writer (a lock covers what is under it)."""
    folder = os.path.dirname(path)
    while folder != os.path.dirname(folder):
        try:
            found = read_holder(folder)
        except ForeignLock:
            raise
        except ContractError:  # a folder above that we may not read holds no lock of ours
            found = None
        if found and gone(*found) is None:
            return folder, found[0]
        folder = os.path.dirname(folder)
    return path, None


def _pause(seconds: float) -> None:
    time.sleep(seconds)


def _try_take(path: str, command: str | None) -> Holder | None:
    """Take PATH's lock (None) or return its live holder. Under `_guard`."""
    mine = this_process(command)
    lock = lock_path(path)
    body = json.dumps({"format": FORMAT, **asdict(mine)}, indent=1) + "\n"
    private = f"{lock}.{mine.token}"
    with open(private, "x", encoding="utf-8") as f:
        f.write(body)
        f.flush()
        os.fsync(f.fileno())
    try:
        for _ in range(100):  # each turn: someone else's lock was there and went, or was taken over
            try:
                os.link(private, lock)
                break
            except FileExistsError:
                pass
            found = read_holder(path)
            if found is None:
                continue
            reason = gone(*found)
            if reason is None:
                return found[0]
            if remove_if(path, found[0].token, mine.token):
                print(f"xmdata: {path}: took over the lock of {found[0].named()}: {reason}", file=sys.stderr,
                      flush=True)
        else:
            raise FolderBusy(f"{path}: its lock kept changing hands; try again")
    finally:
        os.unlink(private)
    stop = threading.Event()
    _holding()[path] = _Held(mine, 1, stop)
    threading.Thread(target=_refresh, args=(path, mine.token, stop), daemon=True,
                     name="xmdata-lock-lease").start()
    return None


def remove_if(folder: str, token: str, by: str) -> bool:
    """Remove FOLDER's lock if it is still the one with TOKEN: renamed first to a name of BY's own,
    which only one remover can do; a live lock moved by a race is put back. Whether it was removed."""
    lock, moved = lock_path(folder), f"{lock_path(folder)}.gone-{by}"
    try:
        os.rename(lock, moved)
    except FileNotFoundError:
        return False
    try:
        if _token_in(moved) == token:
            return True
        try:  # another's, taken between our look and our rename: back where it was
            os.link(moved, lock)
        except FileExistsError:
            pass
        return False
    finally:
        os.unlink(moved)


def _refresh(path: str, token: str, stop: threading.Event) -> None:
    """The lease: the lock's mtime, renewed while it is held, so a writer on another host sees it live."""
    every = max(settings.LOCK_LEASE_S.get() / 4, 0.1)
    while not stop.wait(every):
        try:
            if _token_in(lock_path(path)) != token:
                return  # cleared (`xmdata unlock --force`) or taken over: not ours to renew
            os.utime(lock_path(path))
        except OSError:
            return


def _token_in(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f).get("token")
    except (OSError, ValueError):
        return None


def _release(path: str) -> None:
    with _guard:
        held = _holding().get(path)
        if held is None:
            return
        held.count -= 1
        if held.count:
            return
        del _holding()[path]
        held.stop.set()
        if _token_in(lock_path(path)) == held.holder.token:
            remove_if(path, held.holder.token, held.holder.token)


def remove_stray_temp_files(root: str) -> int:
    """Delete temp files and folders a killed run left behind (they never became outputs); returns how many.

    Only where no live writer but this process holds the lock (runtime/folder_lock.py): nothing when
    ROOT or a folder above it is another's, and no folder under ROOT that another holds. Under a lock
    of this process, the temp files are a gone writer's (`one_writer` sweeps when it takes a lock,
    before the first write) or this run's own whose writers have all returned (run_shards, at a
    stage's end)."""
    if storage.is_url(root):  # uploads are whole or absent: nothing half-written to remove
        return 0
    removed, top = 0, storage.local(root)
    if written_by_another(top, above=True):
        return 0
    for folder, subfolders, files in os.walk(top):
        if folder != top and LOCK_NAME in files and written_by_another(folder):
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
