"""`xmdata unlock FOLDER` and `xmdata status FOLDER`: who holds a folder's lock, and clearing a gone
writer's (runtime/folder_lock.py). argparse only until a command runs."""
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
    from xmdata.runtime import folder_lock
    from xmdata.schemas import ContractError

    folder = os.path.realpath(args.folder)
    lines = []
    path = folder
    while True:
        try:
            found = folder_lock.read_holder(path)  # not ours: ForeignLock, one line, exit 2
        except folder_lock.ForeignLock:
            raise
        except ContractError:  # a folder above that we may not read
            found = None
        if found:
            holder, age = found
            reason = folder_lock.gone(holder, age)
            whose = "" if path == folder else f" (its lock covers {folder})"
            if reason:
                lines.append(f"{path}: locked by {holder.named()}, which is gone: {reason}; the next writer takes "
                             f"it over, or `xmdata unlock {path}` clears it{whose}")
            else:
                lines.append(f"{path}: being written by {holder.named()}; lease renewed {age:.0f} s ago{whose}")
        if os.path.dirname(path) == path:
            break
        path = os.path.dirname(path)
    print("\n".join(lines) if lines else f"{folder}: no writer holds it")
    return 0


def unlock(args: argparse.Namespace) -> int:
    from xmdata.runtime import folder_lock
    from xmdata.schemas import ContractError

    folder = os.path.realpath(args.folder)
    found = folder_lock.read_holder(folder)  # not ours: ForeignLock, one line, exit 2, nothing deleted
    if found is None:
        print(f"{folder}: no lock to clear")
        return 0
    holder, age = found
    reason = folder_lock.gone(holder, age)
    if reason is None and not args.force:
        raise ContractError(f"{folder} is being written by {holder.named()}; not cleared (--force clears it "
                            f"anyway, and a second writer may then start beside it)")
    if not folder_lock.remove_if(folder, holder.token, folder_lock.this_process().token):
        raise ContractError(f"{folder}: its lock changed hands while it was read; see `xmdata status {folder}`")
    print(f"{folder}: cleared the lock of {holder.named()}" + (f": {reason}" if reason else " (--force)"))
    return 0


UNLOCK = Command("unlock", "clear the lock a gone run left in an output folder (a live writer's only with --force); "
                 "says whose it was", add_unlock_arguments, unlock, guide="how-to/releases.md")
