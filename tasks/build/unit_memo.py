"""What keys a stage's memo beyond its params (runtime/memo.py): each model's content, the libraries
and the platform that compute the numbers — the facts a release manifest records.

A local model is known by the sha256 of its files (tasks/release/model_content.py: the folder it sits
in is not part of it), so the same weights at another path hit and other weights at the same path
miss; a hub model by its id and the commit its revision resolves to in the local hub cache. Hashing
is done once per process and model state: a file replaced at the same path changes its size, mtime
or inode, and is hashed again.
"""
from __future__ import annotations

import functools
import os

from xmdata.models.base import ModelSpec, looks_like_path, resolve_local_path
from xmdata.runtime import memo

# Environment prefixes that choose a math library's kernels (tests/release/test_demo_build.py's other CPU).
KERNEL_VARIABLES = ("ATEN_", "ONEDNN_", "DNNL_", "MKL_", "OPENBLAS_")
# …less the ones that set only how many threads run them: a worker's share (MKL_NUM_THREADS, set by
# executors.use_worker_threads in the command's process and by the cluster on its workers) differs by
# where a shard runs, and the thread count does not decide a result (tests/release/test_demo_build.py).
THREAD_VARIABLES = ("MKL_NUM_THREADS", "MKL_DYNAMIC", "OPENBLAS_NUM_THREADS", "MKL_DOMAIN_NUM_THREADS")


def memo_for(kind: str, *models: ModelSpec) -> memo.UnitMemo | None:
    """The memo of `kind` units for the shard running now; None when it is off, no shard runs, or a
    model cannot be identified by its content (a hub id not in the local cache)."""
    if not memo.active():
        return None
    identities = [model_identity(spec) for spec in models]
    if any(identity is None for identity in identities):
        return None
    return memo.unit_memo(kind, {"models": identities, **platform_facts()})


def model_identity(spec: ModelSpec) -> dict | None:
    """The backend, dtype, device and options are in the stage's params; this is what the name or
    path stands for. An open_clip model's weights are its `pretrained` option: a file (its content,
    wherever it lies) or a tag (the hub repository open_clip downloads it from, at its cached commit)."""
    if spec.backend == "open_clip" and spec.option("pretrained"):
        weights = open_clip_weights(spec.name_or_path, spec.option("pretrained"))
        if weights is None:
            return None
        if not spec.is_local:  # an architecture of open_clip's own registry: its version is in the key
            return {"open_clip": spec.name_or_path, "pretrained": weights}
        path = resolve_local_path(spec)
        return {**_content(path, _state(path)), "pretrained": weights}
    if not spec.is_local:
        commit = hub_commit(spec.name_or_path, spec.revision)
        return None if commit is None else {"hub": spec.name_or_path, "commit": commit}
    path = resolve_local_path(spec)
    return _content(path, _state(path))


def open_clip_weights(model: str, pretrained: str) -> dict | None:
    """A weights file's content, or a tag's hub repository and cached commit; None when neither can
    be told here (a tag open_clip fetches from a plain URL, or not in the local hub cache)."""
    if looks_like_path(pretrained):
        path = os.path.expanduser(pretrained)
        return _content(path, _state(path)) if os.path.exists(path) else None
    try:
        import open_clip

        repo = (open_clip.get_pretrained_cfg(model, pretrained) or {}).get("hf_hub", "").strip("/")
    except Exception:  # noqa: BLE001 - not a model of its registry: the load says why
        return None
    commit = hub_commit(repo, None) if repo else None
    return None if commit is None else {"hub": repo, "commit": commit}


def _state(path: str) -> tuple:
    """Every file's (relative path, size, mtime, inode): cheap, and changed by any replacement."""
    if os.path.isfile(path):
        found = [(path, os.stat(path))]
    else:
        found = sorted((os.path.join(d, n), os.stat(os.path.join(d, n))) for d, _, names in os.walk(path) for n in names)
    return tuple((os.path.relpath(p, path), s.st_size, s.st_mtime_ns, s.st_ino) for p, s in found)


@functools.lru_cache(maxsize=64)
def _content(path: str, state: tuple) -> dict:
    from xmdata.tasks.release.manifest import model_fingerprint

    fingerprint = model_fingerprint("memo", "memo", path, "memo", None)
    return {"files": fingerprint.get("files"), "sha256": fingerprint.get("sha256")}


@functools.lru_cache(maxsize=64)
def hub_commit(repo: str, revision: str | None) -> str | None:
    """The commit a hub id's revision resolves to in the local hub cache (what a load would read)."""
    try:
        from huggingface_hub import snapshot_download

        return os.path.basename(snapshot_download(repo, revision=revision, local_files_only=True).rstrip("/"))
    except Exception:  # noqa: BLE001 - not cached here: the load fails on its own, the memo stays out
        return None


@functools.cache
def platform_facts() -> dict:
    """Library versions and the machine's kernels-deciding facts, read once per process: with the
    variables that make torch, oneDNN, MKL or OpenBLAS choose other kernels (what the platform record's
    torch facts key on, ATEN_*, and the others), so entries computed under other kernels are not served."""
    from xmdata.runtime import settings
    from xmdata.tasks.release.manifest import package_versions, platform_record

    return {"packages": package_versions(), "platform": platform_record(),
            "kernels": [(k, v) for k, v in settings.variables(KERNEL_VARIABLES) if k not in THREAD_VARIABLES]}
