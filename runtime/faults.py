"""Faults of the environment (a full disk, a worker killed for memory), named where they happen so
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


def killed_worker_reason(stage: str, index: int, memory_limit: str | None) -> str:
    """A shard whose workers died running it, again and again (Dask's KilledWorker): the knobs a user
    can turn to make its share of memory larger or its work smaller."""
    limit = f" (each worker's memory limit: {memory_limit})" if memory_limit else ""
    return (f"stage {stage}, shard-{index:05d}: the workers running it died {_retries()} times, killed "
            f"for memory or crashed{limit}; give a worker more memory (fewer --workers, a larger "
            f"memory_limit in --cluster-kwargs) or a shard less work (more --shards, a smaller --batch-size)")


def _retries() -> str:
    import dask

    return str(dask.config.get("distributed.scheduler.allowed-failures") + 1)
