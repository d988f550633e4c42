"""Preflight for URLs: a store that cannot be used is refused in one line before any work starts.

Four ways a URL fails before a byte is written — a scheme no installed filesystem handles, an
endpoint nobody answers on, credentials missing or refused, a bucket that does not exist — each
becomes a ContractError (exit 2) naming the URL and what to do, instead of a retry loop inside a
shard and a traceback minutes later.
"""
from __future__ import annotations

import copy

from xmdata.schemas.contract import ContractError

from . import storage

BUCKET_STORES = ("s3", "s3a", "gs", "gcs", "az", "abfs", "abfss")
# Preflight fails fast: one attempt, a short timeout (s3fs otherwise retries for minutes). botocore's
# total_max_attempts counts the first request; its max_attempts counts retries only (1: two attempts).
_S3_PREFLIGHT = {"config_kwargs": {"connect_timeout": 5, "read_timeout": 10,
                                   "retries": {"total_max_attempts": 1}}}


def check_location(url: str, what: str, must_exist: bool = False) -> None:
    """`what` (e.g. '--out') at `url` is usable: its bucket exists and answers to our credentials;
    with `must_exist`, the object itself is there (an input)."""
    if not storage.is_url(url):
        return
    try:
        fs, inner = _preflight_filesystem(url)
        if url.split("://", 1)[0] in BUCKET_STORES:
            fs.ls(inner.split("/", 1)[0], detail=False)  # the bucket exists and lets us in
        if must_exist and not fs.exists(inner):
            raise ContractError(f"{what} {url}: not found")
    except ContractError:
        raise
    except Exception as exc:  # noqa: BLE001 — botocore, aiohttp, gcsfs… raise many kinds
        raise ContractError(f"{what} {url}: {_reason(exc, url)}") from exc


def _preflight_filesystem(url: str):
    import fsspec.core

    protocol = url.split("://", 1)[0]
    try:
        fsspec.get_filesystem_class(protocol)
    except (ValueError, ImportError) as exc:
        detail = str(exc).splitlines()[0] if isinstance(exc, ImportError) else "unknown to fsspec"
        raise ContractError(f"{url}: no filesystem installed for {protocol}:// ({detail})") from exc
    options = storage.storage_options()
    if protocol in ("s3", "s3a"):
        options = {**copy.deepcopy(_S3_PREFLIGHT), **options, "skip_instance_cache": True}  # botocore rewrites it
    return fsspec.core.url_to_fs(url, **options)  # the filesystem, and the path within it


def _reason(exc: BaseException, url: str) -> str:
    name = type(exc).__name__
    chain = f"{name}: {exc}"
    if exc.__cause__ is not None:
        chain += f" ({type(exc.__cause__).__name__}: {exc.__cause__})"
    bucket = url.split("://", 1)[1].split("/", 1)[0]
    if "NoCredentials" in chain or "Unable to locate credentials" in chain:
        return "no credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or --storage-option key=… secret=…)"
    if "NoSuchBucket" in chain or "bucket does not exist" in chain:
        return f"bucket {bucket!r} does not exist"
    if isinstance(exc, FileNotFoundError):
        return f"'Not Found' for bucket {bucket!r}: no such bucket, or the endpoint is not an object store"
    if isinstance(exc, PermissionError) or "AccessDenied" in chain or "Forbidden" in chain \
            or "InvalidAccessKeyId" in chain or "SignatureDoesNotMatch" in chain:
        return f"access to bucket {bucket!r} refused: check the credentials"
    if "connect" in chain.lower() or "timeout" in chain.lower() or isinstance(exc, (OSError, TimeoutError)):
        if not url.startswith(("s3://", "s3a://")):
            return f"cannot reach its store ({chain.splitlines()[0][:200]})"
        endpoint = storage.storage_options().get("endpoint_url") or _env_endpoint() or "the default endpoint"
        return f"cannot reach {endpoint} ({name}); check AWS_ENDPOINT_URL / --storage-option endpoint_url"
    return chain.splitlines()[0][:300]


def _env_endpoint() -> str | None:
    from . import settings

    return settings.AWS_ENDPOINT_URL_S3.get() or settings.AWS_ENDPOINT_URL.get()
