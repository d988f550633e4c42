"""Out-of-memory backoff for model batches: a batch that runs out of (GPU) memory is halved and each
half retried, down to one item; an item that fails alone is refused with reason `out_of_memory`
instead of failing its shard. Any other error propagates unchanged.

The sizes of the batches that ran and of those that ran out are kept, so that a stage can report
what it did (a log line per shard, and the refused items' reject values).
"""
from __future__ import annotations

import logging
import sys
from dataclasses import dataclass, field
from typing import Callable, Sequence, TypeVar

from .token_batches import filled

OUT_OF_MEMORY = "out_of_memory"
T = TypeVar("T")
R = TypeVar("R")
log = logging.getLogger("xmdata.oom")


class OutOfMemory:
    """The result of an item that ran out of memory even alone."""

    def __repr__(self) -> str:
        return "OutOfMemory()"


FAILED = OutOfMemory()


def is_out_of_memory(exc: BaseException) -> bool:
    """torch's OutOfMemoryError, and the RuntimeErrors CUDA, cuBLAS and CTranslate2 raise for it."""
    if type(exc).__name__ == "OutOfMemoryError":
        return True
    text = str(exc).lower()
    return isinstance(exc, (RuntimeError, MemoryError)) and ("out of memory" in text or "cublas_status_alloc_failed" in text)


def release_cached_memory() -> None:
    """Give the failed batch's cached blocks back before the retry (torch only, if already imported)."""
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


@dataclass
class BatchSizes:
    ran: list[int] = field(default_factory=list)
    out_of_memory: list[int] = field(default_factory=list)

    def summary(self) -> str:
        return f"batches out of memory: sizes {self.out_of_memory}; ran: sizes {self.ran}"


def run_with_backoff(items: Sequence[T], run: Callable[[Sequence[T]], list[R]],
                     sizes: BatchSizes | None = None, fill_to: int | None = None) -> list[R | OutOfMemory]:
    """run(items) -> one result per item, halving on out-of-memory; FAILED for an item that failed alone.

    `fill_to`: the first call holds that many items, the list filled with copies of its last item
    (their results dropped), so that every batch of a kind runs in one shape and an item's result
    does not depend on its batch-mates (token_batches.py). The halves of a batch that ran out of
    memory run at their own size, or they would not fit: their results may differ in the last digits."""
    sizes = sizes if sizes is not None else BatchSizes()
    if not items:
        return []
    try:
        batch = filled(items, fill_to or 0)
        results = run(batch)
        if len(results) == len(batch):  # else left whole: the caller's count check names a broken backend
            results = results[:len(items)]
        sizes.ran.append(len(items))
        return results
    except Exception as exc:
        if not is_out_of_memory(exc):
            raise
    # Outside the except block, so the exception's frames (and the tensors they hold) are freed first.
    sizes.out_of_memory.append(len(batch))
    release_cached_memory()
    if len(batch) > len(items):  # the filled shape did not fit: the items as they are, then halves
        return run_with_backoff(items, run, sizes)
    if len(items) == 1:
        return [FAILED]
    half = (len(items) + 1) // 2
    return run_with_backoff(items[:half], run, sizes) + run_with_backoff(items[half:], run, sizes)


def report(stage: str, sizes: BatchSizes) -> None:
    if sizes.out_of_memory:
        log.warning("%s: %s", stage, sizes.summary())
