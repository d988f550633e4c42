"""A release published to an object store (s3://, gs://, az://): built in a local staging folder as
any release is, then uploaded file by file with manifest.json last.

An object store has no rename, so a release folder cannot appear at once. The manifest is what
makes a release: the old one is deleted before anything changes, every file goes up whole (one PUT
each), files an earlier release had and this one has not are removed, and the new manifest, which
holds every file's sha256, goes up last. A reader (and `xmdata release verify URL`) trusts a
release only through its manifest; a killed upload leaves no manifest, and the rerun resumes from
the staging folder, whose build records say what is finished.
"""
from __future__ import annotations

import hashlib
import os
import tempfile

from xmdata.runtime import storage
from xmdata.schemas.contract import ContractError

from xmdata.tasks.release.manifest import MANIFEST, verify_release


def staging_folder(url: str) -> str:
    """Where a release bound for URL is built: one folder per URL under XMDATA_CACHE, kept, so a
    rerun resumes (its build/ holds the shards and completion records)."""
    return os.path.join(storage.cache_root(), "releases", hashlib.sha256(url.encode()).hexdigest()[:16])


def release_folders(out: str, work: str | None) -> tuple[str | None, str, str]:
    """(the URL the release goes to or None, the local folder it is built in, its build folder: a
    URL when --work is one, so workers that share only the store can build it)."""
    target = out if storage.is_url(out) else None  # an object store: built here, uploaded at the end
    folder = os.path.abspath(staging_folder(target) if target else storage.local(out))
    return target, folder, storage.absolute(work) if work else os.path.join(folder, "build")


LOCAL_STEPS = ("imports", "mmmeb", "benchmarks")  # steps that still write with local tools


def check_work(config, work: str | None) -> None:
    """A build folder on a store holds the shard stages' work; the steps run in the flow process
    that write with local tools (imports, MMMEB, CLIPScore benchmark sets) need a local one."""
    local_only = [step for step in LOCAL_STEPS if getattr(config, step, None)]
    if work and storage.is_url(work) and local_only:
        raise ContractError(f"--work {work}: this config's {', '.join(local_only)} step(s) write with local "
                            f"tools; give a local --work (the release itself may still go to a URL --out)")


def upload_release(staging: str, url: str, manifest: dict) -> None:
    names = sorted(manifest["release"]["files"])
    fs, root = storage.filesystem(url)
    if fs.exists(f"{root}/{MANIFEST}"):
        fs.rm_file(f"{root}/{MANIFEST}")  # from here on, the release at URL is incomplete
    for name in names:
        storage.upload(os.path.join(staging, name), storage.join(url, name))
    for name in sorted(set(_published(fs, root)) - set(names)):
        fs.rm_file(f"{root}/{name}")
    storage.upload(os.path.join(staging, MANIFEST), storage.join(url, MANIFEST))


def _published(fs, root: str) -> list[str]:
    """Objects under the release, relative, except the manifest (build folders are not uploaded)."""
    found = fs.find(root) if fs.exists(root) else []
    return [p[len(root) + 1:] for p in found if p[len(root) + 1:] != MANIFEST]


def verify_remote_release(url: str) -> list[str]:
    """`verify` for a release in an object store: its files are fetched and checked as local ones."""
    fs, root = storage.filesystem(url)
    with tempfile.TemporaryDirectory(prefix="xmdata-verify-") as copy:
        for name in _published(fs, root) + ([MANIFEST] if fs.exists(f"{root}/{MANIFEST}") else []):
            os.makedirs(os.path.dirname(os.path.join(copy, name)), exist_ok=True)
            fs.get_file(f"{root}/{name}", os.path.join(copy, name))
        return verify_release(copy)
