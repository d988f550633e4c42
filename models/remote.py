"""Models named by URL (s3://bucket/models/m2m100, gs://…, hf://org/name): fetched once into the
model cache, keyed by the URL and the etags of its objects, then loaded as any local folder.

Downloaded, not streamed through fsspec: the backends (transformers, open_clip, COMET, fastText,
CTranslate2) open files by local path, several times and memory-mapped, and the manifest hashes a
model's local files. A copy per machine costs one download; a changed object (new etag) is a new
copy, so a model replaced at the same URL is never loaded stale.
"""
from __future__ import annotations

import hashlib
import json
import os
import posixpath

from xmdata.runtime import storage
from xmdata.schemas.contract import ContractError

COMPLETE = ".xmdata-complete"  # in every finished copy: a folder holding it is a whole model


def fetch_model(url: str, backend: str) -> str:
    """The local copy of the model file or folder at URL, downloaded when this version is not cached."""
    objects = _objects(url, backend)
    key = hashlib.sha256(json.dumps([url, objects], sort_keys=True).encode()).hexdigest()[:16]
    folder = os.path.join(storage.cache_root(), "remote-models", key)
    local = os.path.join(folder, posixpath.basename(url.rstrip("/")) or "model")
    if os.path.exists(os.path.join(folder, COMPLETE)):
        return local

    def download(partial: str) -> None:
        fs, root = storage.filesystem(url)
        for name in objects:
            target = os.path.join(partial, os.path.basename(local), *([name] if name else []))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            fs.get_file(posixpath.join(root, name) if name else root, target)
        open(os.path.join(partial, COMPLETE), "w").close()

    # The copy appears whole (an interrupted one stays a hidden temp folder); when another process of
    # this machine finished the same copy first, that one is used.
    from xmdata.runtime.atomic import publish_folder  # pyarrow: not at the import of the flags' modules

    publish_folder(folder, download)
    if not os.path.exists(os.path.join(folder, COMPLETE)):
        raise ContractError(f"{folder}: a folder without {COMPLETE} is in the way of the model's copy; delete it")
    return local


def _objects(url: str, backend: str) -> dict[str, str]:
    """{path under URL ('' for a single file): etag or size+mtime} — what the cache key covers."""
    from xmdata.runtime.storage_check import check_location

    try:  # refusals are ContractErrors (exit 2, as a ModelError): models.base imports this module
        check_location(url, f"{backend} model", must_exist=True)
        fs, root = storage.filesystem(url)
        info = fs.info(root)
        found = {root: info} if info["type"] == "file" else fs.find(root, detail=True)
    except FileNotFoundError as exc:  # check_location refused the rest: scheme, store, credentials, bucket
        raise ContractError(f"{backend} model {url}: not found") from exc
    if not found:
        raise ContractError(f"{backend} model {url}: an empty folder")
    return {posixpath.relpath(path, root) if path != root else "": _version(info) for path, info in sorted(found.items())}


def _version(info: dict) -> str:
    """An object's version as its store says it: S3/GCS/Azure etag, the hub's blob id, else size+mtime."""
    tag = info.get("ETag") or info.get("etag") or info.get("blob_id")
    return str(tag) if tag else f"{info.get('size')}@{info.get('LastModified') or info.get('mtime')}"
