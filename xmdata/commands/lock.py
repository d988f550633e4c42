"""`xmdata unlock FOLDER` and `xmdata status FOLDER`: who holds a folder's lock, and clearing a gone
writer's (runtime/lock_files.py). argparse only until a command runs."""
from __future__ import annotations

import argparse
import os

from xmdata.cli_command import Command


def add_unlock_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="an output folder (a command's --out, a release or its work folder)")
    p.add_argument("--force", action="store_true",
                   help="clear it even though its writer looks alive (a second writer may then start beside it)")


def add_status_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", nargs="?", default=None,
                   help="an output folder: who is writing it (its lock), instead of the service")


def status(args: argparse.Namespace) -> int:
    """`xmdata status FOLDER`: its lock's holder, alive or gone, and a lock above that covers it;
    `xmdata status`: the service's."""
    if args.folder is None:
        from xmdata.service.service_status import service_command

        return service_command(args)
    from xmdata.runtime import lock_files
    from xmdata.schemas import ContractError

    folder = os.path.realpath(args.folder)
    lines = []
    path = folder
    while True:
        try:
            holder = lock_files.read_holder(path)  # not ours: ForeignLock, one line, exit 2
            held = lock_files.held_by_another(path)
        except lock_files.ForeignLock:
            raise
        except (ContractError, PermissionError):  # a folder above that we may not read
            holder, held = None, False
        whose = "" if path == folder else f" (its lock covers {folder})"
        if held:
            who = holder.named() if holder else "a process that has not named itself yet"
            lines.append(f"{path}: being written by {who}{whose}")
        elif holder or os.path.lexists(lock_files.lock_path(path)):
            who = f"locked by {holder.named()}, which is gone" if holder else "a gone writer's lock file is there"
            lines.append(f"{path}: {who} (its lock is free); the next writer takes it over, or `xmdata unlock "
                         f"{path}` clears it{whose}")
        if os.path.dirname(path) == path:
            break
        path = os.path.dirname(path)
    print("\n".join(lines) if lines else f"{folder}: no writer holds it")
    return 0


def unlock(args: argparse.Namespace) -> int:
    """A gone writer's lock (free: its process ended) is taken, its files removed, then let go; a live
    writer's files only with --force (its lock stays with it: a new writer locks a new file beside it)."""
    from xmdata.runtime import lock_files
    from xmdata.schemas import ContractError

    folder = os.path.realpath(args.folder)
    holder = lock_files.read_holder(folder)  # not ours: ForeignLock, one line, exit 2, nothing deleted
    if holder is None and not os.path.lexists(lock_files.lock_path(folder)):
        print(f"{folder}: no lock to clear")
        return 0
    named = holder.named() if holder else "a writer that did not name itself"
    if lock_files.held_by_another(folder) or not lock_files.take_to_clear(folder):
        if not args.force:
            raise ContractError(f"{folder} is being written by {named}; not cleared (--force clears it "
                                f"anyway, and a second writer may then start beside it)")
        lock_files.clear_files(folder)
        print(f"{folder}: cleared the lock of {named} (--force)")
        return 0
    print(f"{folder}: cleared the lock of {named}: it is gone (its lock was free)")
    return 0


UNLOCK = Command("unlock", "clear the lock a gone run left in an output folder (a live writer's only with --force); "
                 "says whose it was", add_unlock_arguments, unlock, guide="how-to/releases.md")
