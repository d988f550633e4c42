"""Faults of the environment (a full disk, a lost scheduler, a worker killed for memory), named where they happen so
that the command can end in one line: which folder, which stage and shard, what is kept.

A full disk is no shard's fault: every shard after it would fail the same way. So a write that finds
its disk full (ENOSPC) or over quota (EDQUOT) raises OutOfSpace, naming the folder, and the stage
stops at once as for a bad input (executors.shard_outcome); the command says it in one line
(xmdata/faults.py). Temp files the failed write made are removed (atomic.py), so what is on the disk
is only what was finished: every shard with its completion record, every memo entry stored.
"""
from __future__ import annotations

import contextlib
import errno
import os
from typing import Iterator

OUT_OF_SPACE_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})


class OutOfSpace(OSError):
    """A write into `folder` found its disk full or over quota."""

    def __init__(self, code: int, folder: str):
        super().__init__(code, os.strerror(code), folder)

    @property
    def folder(self) -> str:
        return self.filename

    def __reduce__(self):  # from a Dask worker to the client: the folder and the errno travel
        return OutOfSpace, (self.errno, self.filename)


def is_out_of_space(exc: BaseException | None) -> bool:
    """An OSError (a Dask worker's, an Arrow write's: pyarrow keeps the errno) of a full disk or quota."""
    return isinstance(exc, OSError) and exc.errno in OUT_OF_SPACE_ERRNOS


@contextlib.contextmanager
def writing_into(folder: str) -> Iterator[None]:
    """A full disk met inside the block is raised as OutOfSpace naming `folder`."""
    try:
        yield
    except OutOfSpace:
        raise
    except OSError as exc:
        if exc.errno in OUT_OF_SPACE_ERRNOS:
            raise OutOfSpace(exc.errno, folder) from exc
        raise


class SchedulerLost(RuntimeError):
    """The Dask scheduler a stage ran on went away mid-stage (its process killed, its host gone): the
    client lost its connection and Dask cancelled every future. Not a shard's fault: the stage stops."""

    def __init__(self, address: str, stage: str):
        self.address, self.stage = address, stage
        super().__init__(f"the Dask scheduler {address} went away during stage {stage}")


STORE_ATTEMPTS = 5  # an object-store request is tried this often (botocore's standard retries), then fails
STORE_GONE = ("EndpointConnectionError", "ConnectTimeoutError", "ReadTimeoutError", "ConnectionClosedError")


class StoreUnreachable(RuntimeError):
    """The object store did not answer (refused, timed out, 5xx) after STORE_ATTEMPTS tries with
    backoff: no shard can be written, so the stage stops, as for a full disk."""


def store_unreachable(exc: BaseException) -> StoreUnreachable | None:
    """`exc` (or what it was raised from) as StoreUnreachable when the store itself failed: a connection
    refused or timed out, or a 5xx answer (botocore's ClientError, or s3fs's OSError made of one)."""
    seen = exc
    while seen is not None:
        if isinstance(seen, StoreUnreachable):
            return seen
        name = type(seen).__name__
        response = getattr(seen, "response", None)  # botocore's ClientError: the answer's status
        status = response.get("ResponseMetadata", {}).get("HTTPStatusCode") if isinstance(response, dict) else None
        botocore = type(seen).__module__.startswith(("botocore", "aiobotocore"))  # not a model's or a page's server
        if botocore and (name in STORE_GONE or (status or 0) >= 500):
            first = str(seen).splitlines()[0] if str(seen) else name
            return StoreUnreachable(f"the object store did not answer after its retries ({name}: {first})")
        seen = seen.__cause__ or seen.__context__
    return None


def killed_worker_reason(memory_limits: list[int]) -> str:
    """A shard whose workers died running it, again and again (Dask's KilledWorker, after
    `distributed.scheduler.allowed-failures` retries): the limit it met, and the knobs a user can turn
    to give a worker more memory or a shard less work. `memory_limits`: the workers' (bytes; 0: none;
    [] unknown)."""
    from dask.utils import format_bytes

    limits = sorted({limit for limit in memory_limits if limit})
    if not memory_limits:  # the scheduler did not say
        limit = "over the worker's memory limit or crashed"
    elif not limits:
        limit = "no memory limit was set: the machine's memory ran out, or the stage crashes its process"
    else:
        shown = format_bytes(limits[0]) if len(limits) == 1 else f"{format_bytes(limits[0])} to {format_bytes(limits[-1])}"
        limit = f"over the worker's memory limit ({shown}) or crashed"
    return (f"its workers died running it, again after Dask's retries (KilledWorker): {limit}; give a worker "
            f"more memory (fewer --workers, or memory_limit= in --cluster-kwargs) or the shard less work "
            f"(more --shards, or the stage's smaller batch size)")
