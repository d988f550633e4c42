"""A loader that keeps the model busy: threads prepare the next batches while the model runs this one.

Image decoding (PIL) and resizing release the GIL, as does a torch forward, so threads are enough:
no worker processes to start per shard, and nothing to pickle.
"""
from __future__ import annotations

import contextvars
from collections import deque
from concurrent.futures import ThreadPoolExecutor
from typing import Callable, Iterator, Sequence, TypeVar

Item = TypeVar("Item")
Loaded = TypeVar("Loaded")


class PrefetchingLoader:
    """Batches of load(item), in order, with up to `depth` batches loading ahead of the consumer.

    Loading starts when the loader is made, so work done before iterating (encoding the texts of
    the shard) already overlaps with decoding the first images.
    """

    def __init__(self, items: Sequence[Item], batch_size: int, load: Callable[[Item], Loaded],
                 threads: int, depth: int = 2):
        self._batches = iter([items[i:i + batch_size] for i in range(0, len(items), batch_size)])
        self._load = load
        self._pool = ThreadPoolExecutor(max(1, threads), thread_name_prefix="xmdata-decode")
        self._pending: deque = deque()
        for _ in range(max(1, depth)):
            self._submit_next()

    def _submit_next(self) -> None:
        batch = next(self._batches, None)
        if batch is not None:
            # each load runs in a copy of the caller's context: the storage options of this run reach the threads
            self._pending.append([self._pool.submit(contextvars.copy_context().run, self._load, item) for item in batch])

    def __iter__(self) -> Iterator[list[Loaded]]:
        try:
            while self._pending:
                futures = self._pending.popleft()
                self._submit_next()  # keep `depth` batches in flight while the caller uses this one
                yield [future.result() for future in futures]
        finally:
            self.close()

    def close(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)

    def __enter__(self) -> "PrefetchingLoader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
