"""What a publish would change (publish.py): the release's files against the repo's tree, by content id
(an LFS file's sha256, another's git blob id), as a plan of paths to add, change and delete."""
from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass, field

MANAGED = ("data/", "rejects/")  # the folders whose files the release owns: one it no longer has is deleted


@dataclass
class LocalFile:
    path: str
    size: int
    sha256: str


@dataclass
class Plan:
    """What a commit on HEAD would do: {path: bytes} to add, change and delete."""

    head: str | None
    add: dict[str, int] = field(default_factory=dict)
    change: dict[str, int] = field(default_factory=dict)
    delete: dict[str, int] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f"{kind} {path} ({size:,} bytes)" for kind, part in (("add", self.add), ("change", self.change),
                                                                       ("delete", self.delete))
                for path, size in sorted(part.items())]

    def summary(self) -> str:
        return (f"{len(self.add)} to add, {len(self.change)} to change, {len(self.delete)} to delete; "
                f"{sum(self.add.values()) + sum(self.change.values()):,} bytes to send at most")


def git_blob_sha1(path: str) -> str:
    """The git object id of a file's content (what the Hub gives a file it keeps outside LFS)."""
    digest = hashlib.sha1(f"blob {os.path.getsize(path)}\0".encode())
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def remote_ids(tree) -> dict[str, tuple[str, int]]:
    """{path: (content id, size)} of the files of a repo tree: an LFS file by its sha256, another by its git id."""
    from huggingface_hub.hf_api import RepoFile

    return {item.path: (item.lfs.sha256 if item.lfs else item.blob_id, item.size)
            for item in tree if isinstance(item, RepoFile)}


def same(local: LocalFile, remote: tuple[str, int]) -> bool:
    return remote[0] == local.sha256 or (remote[1] == local.size and remote[0] == git_blob_sha1(local.path))


def plan_commit(files: dict[str, LocalFile], remote: dict[str, tuple[str, int]], head: str | None) -> Plan:
    plan = Plan(head)
    for name, local in files.items():
        if name not in remote:
            plan.add[name] = local.size
        elif not same(local, remote[name]):
            plan.change[name] = local.size
    plan.delete = {name: size for name, (_, size) in remote.items()
                   if name.startswith(MANAGED) and name not in files}
    return plan


def landed(files: dict[str, LocalFile], remote: dict[str, tuple[str, int]]) -> bool:
    """Every path the release lists is in REMOTE with our content."""
    return all(name in remote and same(local, remote[name]) for name, local in files.items())
