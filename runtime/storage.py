"""Where files live: plain paths exactly as before, or any fsspec URL (s3://, gs://, az://, hf://).

A plain path (or file://) goes through `os` and `open`, unchanged, so local builds keep their bytes.
A URL goes through fsspec, with credentials and endpoint from the usual environment
(AWS_ACCESS_KEY_ID, AWS_ENDPOINT_URL, GOOGLE_APPLICATION_CREDENTIALS, …) plus `--storage-option
key=value`, held for the command in a context variable (`using_storage_options`: the flow and its
Prefect task threads see it; a pool of our own submits with `contextvars.copy_context().run`), and
shipped with each shard job to workers that share nothing else with the client.
"""
from __future__ import annotations

import contextlib
import contextvars
import copy
import os
import posixpath

from . import settings
from .faults import STORE_ATTEMPTS

_options: contextvars.ContextVar[dict | None] = contextvars.ContextVar("xmdata_storage_options", default=None)


def cache_root() -> str:
    """XMDATA_CACHE (runtime/settings.py): models, staged releases, converted checkpoints."""
    return settings.CACHE.get()


def is_url(path: str) -> bool:
    return "://" in str(path) and not str(path).startswith("file://")


def local(path: str) -> str:
    """file:///x -> /x; everything else as given."""
    return path[len("file://"):] if str(path).startswith("file://") else path


def absolute(path: str) -> str:
    """A URL as given, a local path made absolute (workers of a cluster have another cwd)."""
    return path if is_url(path) else os.path.abspath(local(path))


def storage_options() -> dict:
    """The options of the command (or shard job) this runs in; {} when none were given."""
    return dict(_options.get() or {})


@contextlib.contextmanager
def using_storage_options(options: dict | None):
    """`options` for every storage call inside the block (the CLI's `--storage-option`s; on a worker,
    those shipped with the shard job). None or {}: the block keeps the options already in force."""
    token = _options.set(dict(options)) if options else None
    try:
        yield
    finally:
        if token is not None:
            _options.reset(token)


def key_values(pairs: list[str], flag: str) -> dict:
    """['cores=8', 'memory=64GB'] -> {'cores': 8, 'memory': '64GB'}: values are YAML scalars."""
    import yaml

    from xmdata.schemas.contract import ContractError

    options = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ContractError(f"{flag} {pair!r}: expected key=value")
        options[key.strip()] = yaml.safe_load(value) if value else ""
    return options


def parse_storage_options(pairs: list[str] | None) -> dict:
    """`--storage-option key=value` (repeatable), e.g. endpoint_url=http://…, anon=true."""
    return key_values(pairs or [], "--storage-option")


def filesystem(path: str):
    """(fsspec filesystem, path inside it) for a URL; listings are never cached, since other
    processes write the same folders."""
    import fsspec

    # A copy each time: botocore rewrites the retries dict it is given (max_attempts -> total_max_attempts)
    options = {**(copy.deepcopy(_S3_DEFAULTS) if _is_s3(path) else {}), **storage_options()}
    fs, inner = fsspec.core.url_to_fs(path, **options)
    return fs, inner


# A request the store refuses, times out or answers 5xx is tried STORE_ATTEMPTS times in all, with
# botocore's standard backoff (random, up to 2^n s, at most 20 s each; under a minute with the timeouts),
# then fails: the stage stops in one line (runtime/faults.py). --storage-option config_kwargs=… replaces it.
_S3_DEFAULTS = {"use_listings_cache": False, "config_kwargs": {
    "retries": {"max_attempts": STORE_ATTEMPTS, "mode": "standard"}, "connect_timeout": 5, "read_timeout": 20}}


def _is_s3(path: str) -> bool:
    return str(path).startswith(("s3://", "s3a://"))


def join(root: str, *parts: str) -> str:
    return posixpath.join(root, *parts) if is_url(root) else os.path.join(local(root), *parts)


def exists(path: str) -> bool:
    if not is_url(path):
        return os.path.exists(local(path))
    fs, inner = filesystem(path)
    return fs.exists(inner)


def open_file(path: str, mode: str = "rb", **kwargs):
    if not is_url(path):
        return open(local(path), mode, **kwargs)
    fs, inner = filesystem(path)
    return fs.open(inner, mode, **kwargs)


def read_bytes(path: str) -> bytes:
    """The whole file; for a URL one GET, FileNotFoundError when absent. s3fs would first HEAD the
    object to plan a concurrent ranged download (and LIST after a 404): shards and records are small."""
    if not is_url(path):
        with open(local(path), "rb") as f:
            return f.read()
    fs, inner = filesystem(path)
    return fs.cat_file(inner, **({"max_concurrency": 1} if _is_s3(path) else {}))


def read_text(path: str) -> str:
    return read_bytes(path).decode("utf-8")


def listdir(folder: str) -> list[str]:
    """Names in a folder; [] when it does not exist."""
    if not is_url(folder):
        folder = local(folder)
        return os.listdir(folder) if os.path.isdir(folder) else []
    fs, inner = filesystem(folder)
    try:
        return [posixpath.basename(p.rstrip("/")) for p in fs.ls(inner, detail=False)]
    except FileNotFoundError:
        return []


def glob(pattern: str) -> list[str]:
    """Paths matching a glob pattern, sorted; for a URL one listing, paths given back as URLs."""
    if not is_url(pattern):
        import glob as local_glob

        return sorted(local_glob.glob(local(pattern)))
    fs, inner = filesystem(pattern)
    protocol = pattern.split("://", 1)[0]
    return sorted(f"{protocol}://{p}" for p in fs.glob(inner))


def remove(path: str) -> None:
    if not is_url(path):
        os.unlink(local(path))
        return
    fs, inner = filesystem(path)
    fs.rm_file(inner)


def upload(local_file: str, path: str) -> None:
    """One object PUT (multipart above fsspec's block size): the store shows the object whole, or
    not at all — never a prefix of it."""
    fs, inner = filesystem(path)
    fs.put_file(local_file, inner)


def write_bytes(path: str, data: bytes) -> None:
    """One object PUT of bytes in memory (multipart above fsspec's block size), like `upload`."""
    fs, inner = filesystem(path)
    fs.pipe_file(inner, data)


def read_parquet(path: str, columns: list[str] | None = None):
    import pyarrow.parquet as pq

    import pyarrow as pa

    if not is_url(path):
        return pq.read_table(local(path), columns=columns)
    return pq.read_table(pa.BufferReader(read_bytes(path)), columns=columns)


def parquet_rows(path: str) -> int:
    import pyarrow.parquet as pq

    import pyarrow as pa

    if not is_url(path):
        return pq.read_metadata(local(path)).num_rows
    return pq.read_metadata(pa.BufferReader(read_bytes(path))).num_rows  # one GET, not HEAD + ranges
