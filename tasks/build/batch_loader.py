"""A loader that keeps the model busy: decoders prepare the next batches while the model runs this one.

Where the decoding runs — this worker's decoder processes, or threads — is tasks/build/decoders.py's.
Every image reader goes through `worker_loader` (scoring, the clean tiers' hashes and embeddings, MMMEB's
embed step, `train clipscore`): each brings its own `load` (its decode recipe), the mechanism is one.
"""
from __future__ import annotations

import time
from collections import deque
from typing import Callable, Iterator, Sequence, TypeVar

from .decoders import ProcessDecoders, ThreadDecoders, worker_decoders

Item = TypeVar("Item")
# The most a loader holds decoded ahead of its consumer, in bytes of pixels for each of its decoders
# (about 4 s of a decoder's output at 224 px): enough batches in flight to keep the decoders busy while a
# model loads (tasks/build/early_loader.py) or stalls, and no more — a worker's, whatever the count of
# workers on its machine.
PREFETCH_BYTES_A_DECODER = 32 << 20


def _refuse(item, message: str):
    raise RuntimeError(f"{item!r}: {message}")


class PrefetchingLoader:
    """Batches of load(item), in order, with up to `depth` batches loading ahead of the consumer.

    `decoders`: a count of threads of its own, or a worker's decoders (`worker_decoders`); `died(item,
    message)`: what an item whose decoder process died on it twice becomes (default: an error);
    `finish(items, loaded)`: run on each batch in the consumer's process as it is handed over (scoring's
    device mode decodes its JPEGs there, on the model's device).
    Loading starts when the loader is made, so work done before iterating (encoding the texts of
    the shard) already overlaps with decoding the first images.
    """

    def __init__(self, items: Sequence[Item], batch_size: int, load: Callable[[Item], Loaded],
                 decoders: int | ThreadDecoders | ProcessDecoders, depth: int = 2,
                 died: Callable[[Item, str], Loaded] = _refuse,
                 finish: Callable[[list[Item], list[Loaded]], list[Loaded]] | None = None):
        self._batches = iter([items[i:i + batch_size] for i in range(0, len(items), batch_size)])
        self._load, self._died, self._finish = load, died, finish
        self.decoders = ThreadDecoders(max(1, decoders)) if isinstance(decoders, int) else decoders
        self._pending: deque = deque()
        self.started = time.perf_counter()
        for _ in range(max(1, depth)):
            self._submit_next()

    def _submit_next(self) -> None:
        batch = next(self._batches, None)
        if batch is not None:
            self._pending.append([(self.decoders.submit(self._load, item), item) for item in batch])

    def __iter__(self) -> Iterator[list[Loaded]]:
        try:
            while self._pending:
                submitted = self._pending.popleft()
                self._submit_next()  # keep `depth` batches in flight while the caller uses this one
                loaded = [self.decoders.result(future, self._load, item, self._died) for future, item in submitted]
                yield loaded if self._finish is None else self._finish([item for _, item in submitted], loaded)
        finally:
            self.close()

    def close(self) -> None:
        while self._pending:
            for future, _ in self._pending.popleft():
                future.cancel()
        self.decoders.release()

    def __enter__(self) -> "PrefetchingLoader":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def prefetch_depth(batch_size: int, image_bytes: int | None, decoders: int) -> int:
    """Batches in flight: as many as PREFETCH_BYTES_A_DECODER x `decoders` holds of images of
    `image_bytes` each (at least 2); 2 when an image's size after decoding is not known ahead (a recipe
    that keeps the aspect ratio)."""
    if not image_bytes:
        return 2
    return max(2, PREFETCH_BYTES_A_DECODER * max(1, decoders) // (max(1, batch_size) * image_bytes))


def worker_loader(items: Sequence[Item], batch_size: int, load: Callable[[Item], Loaded], decoders: int | None = None,
                  died: Callable[[Item, str], Loaded] = _refuse, depth: int = 2,
                  finish: Callable[[list[Item], list[Loaded]], list[Loaded]] | None = None,
                  keep_more: bool = False) -> PrefetchingLoader:
    """Batches of load(item) from this worker's decoder processes (kept between shards; `decoders`: how
    many, default the cores this shard may use), or threads where a process may not have children.
    `load` must pickle (a module-level function, or a partial of one): it runs in a decoder process."""
    return PrefetchingLoader(items, batch_size, load, worker_decoders(decoders, keep_more), depth=depth, died=died,
                             finish=finish)
