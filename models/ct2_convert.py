"""CTranslate2 models converted from a Hugging Face checkpoint once, and cached beside it.

The cache key is the checkpoint's sha256 (every file, by relative path) and the compute type: an
edited checkpoint or another precision is converted anew, and a Dask worker finds the conversion
that the run's preflight (or `xmdata models convert`) made. Heavy imports happen inside functions.
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

from xmdata.runtime import storage

from .base import ModelError, ModelSpec, hub_error, resolve_local_path

ENGINES = ("transformers", "ctranslate2")
COMPUTE_TYPES = ("auto", "int8", "int8_float32", "int8_float16", "int8_bfloat16", "float32", "float16",
                 "bfloat16")
CONVERTED_MARK = "conversion.json"  # written last: a folder without it is an unfinished conversion


def resolve_compute_type(compute_type: str, device: str, dtype: str = "float32") -> str:
    """'auto' is int8 on CPU (CTranslate2's fast path there) and the run's half type on a GPU."""
    if compute_type != "auto":
        return compute_type
    if device.startswith("cuda"):
        return dtype if dtype in ("bfloat16", "float16") else "bfloat16"
    return "int8"


def import_ctranslate2():
    try:
        import ctranslate2
    except ImportError as exc:
        raise ModelError("--engine ctranslate2 needs the ctranslate2 package (pip install 'ctranslate2>=4.5'), "
                         "or use --engine transformers") from exc
    return ctranslate2


def checkpoint_dir(spec: ModelSpec) -> str:
    """The local folder of the Hugging Face checkpoint a spec names (hub ids: their snapshot)."""
    if spec.is_local:
        return resolve_local_path(spec)
    from huggingface_hub import snapshot_download

    try:
        return snapshot_download(spec.name_or_path, revision=spec.revision)
    except Exception as exc:
        raise hub_error(spec, exc) from exc


def checkpoint_sha256(path: str) -> str:
    """sha256 over (relative path, file sha256) of every file, as release manifests fingerprint models.

    Every worker asks at load time, and hashing a 1.2B checkpoint reads 5 GB: the file digests are
    remembered in the cache beside it and reused while a file keeps its size and mtime.
    """
    from xmdata.runtime.atomic import sha256_file, write_text_atomic

    memo_path = cache_root(path) / "file-digests.json"
    try:
        memo = json.loads(memo_path.read_text())
    except (OSError, ValueError):
        memo = {}
    digests = {}
    for file in sorted(os.path.join(d, n) for d, _, names in os.walk(path, followlinks=True) for n in names):
        stat, name = os.stat(file), os.path.relpath(file, path)
        known = memo.get(name)
        same = known is not None and known[:2] == [stat.st_size, stat.st_mtime_ns]
        digests[name] = [stat.st_size, stat.st_mtime_ns, known[2] if same else sha256_file(file)]
    if digests != memo:
        try:
            memo_path.parent.mkdir(parents=True, exist_ok=True)
            write_text_atomic(json.dumps(digests), str(memo_path))
        except OSError:  # a read-only place: hash again next time
            pass
    lines = [f"{name}\0{digest}\n" for name, (_, _, digest) in digests.items()]
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def cache_root(checkpoint: str) -> Path:
    """`<checkpoint>.ct2/` beside it; XMDATA_CACHE/ct2/ when its parent is not writable (a shared hub cache)."""
    beside = Path(checkpoint.rstrip("/") + ".ct2")
    if os.access(beside.parent, os.W_OK):
        return beside
    cache = Path(storage.cache_root())
    return cache / "ct2" / hashlib.sha256(checkpoint.encode()).hexdigest()[:16]


def converted_path(spec: ModelSpec, compute_type: str) -> tuple[str, Path]:
    checkpoint = checkpoint_dir(spec)
    return checkpoint, cache_root(checkpoint) / f"{checkpoint_sha256(checkpoint)[:16]}-{compute_type}"


def ensure_converted(spec: ModelSpec, compute_type: str) -> str:
    """The converted model's folder, converting on first use; ModelError when the converter refuses."""
    ctranslate2 = import_ctranslate2()
    checkpoint, target = converted_path(spec, compute_type)
    if (target / CONVERTED_MARK).is_file():
        return str(target)
    shutil.rmtree(target, ignore_errors=True)  # what a killed conversion left, if anything

    def convert(scratch: str) -> None:
        try:
            converter = ctranslate2.converters.TransformersConverter(checkpoint)
            converter.convert(scratch, quantization=compute_type, force=True)
        except Exception as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise ModelError(f"{spec.backend}: CTranslate2 cannot convert {checkpoint} ({compute_type}): "
                             f"{type(exc).__name__}: {first}. Use --engine transformers for this model.") from exc
        (Path(scratch) / CONVERTED_MARK).write_text(json.dumps(
            {"checkpoint": checkpoint, "compute_type": compute_type, "ctranslate2": ctranslate2.__version__}))

    from xmdata.runtime.atomic import publish_folder  # pyarrow: not at the import of the flags' modules

    publish_folder(str(target), convert)  # whole when it appears; another process's same conversion may come first
    return str(target)
