"""Where a worker decodes images: decoder processes started once per worker process (as its models
are loaded once), or threads where a process may not have children.

Decoding a photo and resizing it is CPU work that threads share badly (docs/explanation/performance.md:
16 threads gave 1.8x one); processes scale with the cores. They are started by `spawn` — never
`fork` from a worker that holds threads or CUDA — and import what the reader's `load` needs: PIL
and numpy for scoring's and the embedders' PIL steps (models/pil_steps.py), the perceptual hash's
module for the clean tiers; torch only for a transform step with no PIL twin (`Opaque`). A worker process of a Dask cluster xmdata starts is not daemonic
(`distributed.worker.daemon`, runtime/worker_start.py) so it may have them; each decoder exits when
its parent goes, `xmdata down` or a kill -9 alike. A daemonic process (a worker of a cluster xmdata did
not start) cannot: it decodes in threads, and says so once.

A decoder that dies (killed, out of memory) breaks the pool: every image it held is decoded again
alone, in a decoder of its own, and an image that kills that one too is refused (`died`), so a
stage never hangs and never loses a row. Memory: `count` decoders x one image at the pixel limit,
plus what the loader holds (its prefetch depth x a batch of decoded arrays, at most
batch_loader.PREFETCH_BYTES_A_DECODER of pixels a decoder where the recipe fixes the images' size).
"""
from __future__ import annotations

import contextvars
import logging
import multiprocessing
import os
import threading
import time
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import Any, Callable

from xmdata.runtime import storage
from xmdata.runtime.process_end import PROCESS_ENDS

log = logging.getLogger(__name__)
START_METHOD = "spawn"


# glibc's mallopt parameters (malloc.h).
M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
# Pillow allocates an image in blocks of at most 16 MiB (its PILLOW_BLOCK_SIZE): under this, every block
# comes from the heap (glibc's largest mmap threshold on 64 bits)...
MMAP_THRESHOLD = 32 << 20
# ...and the heap keeps this much free memory for the next image rather than give it back (a 12 MP
# photograph and its copies): what a decoder holds between images is what it used for the largest.
TRIM_THRESHOLD = 256 << 20


def _decoder_start(parent: int) -> None:
    """A decoder's initializer."""
    _keep_freed_memory()
    _watch_parent(parent)


def _keep_freed_memory() -> None:
    """Reuse the memory of one image for the next. By default glibc maps each block of a decoded photo
    fresh and returns it when freed, so every image page-faults its ~15 MB in again (3,770 faults a
    1600x1200 JPEG): a third of a decoder's CPU time (bench/scoring_loader.py, docs/explanation/
    performance.md). A libc without mallopt (not glibc) keeps its own policy."""
    import ctypes

    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (AttributeError, OSError):
        return
    mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD)
    mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD)


def _watch_parent(parent: int) -> None:
    """Exit when the worker that started this decoder is gone (a kill -9 runs no cleanup in it), rather
    than wait forever on a queue nobody feeds."""
    def watch():
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(0)

    threading.Thread(target=watch, name="xmdata-parent-watch", daemon=True).start()


def _with_storage_options(options: dict, load: Callable, item: Any) -> Any:
    """`load(item)` under the run's storage options, which live in a context variable of the parent."""
    with storage.using_storage_options(options):
        return load(item)


class ThreadDecoders:
    """Decoding in this process's threads; each load runs in a copy of the caller's context (the run's
    storage options reach the threads)."""
    kind = "threads"

    def __init__(self, count: int):
        self.count = count
        self._pool = ThreadPoolExecutor(count, thread_name_prefix="xmdata-decode")

    def submit(self, load: Callable, item: Any) -> Future:
        return self._pool.submit(contextvars.copy_context().run, load, item)

    def result(self, future: Future, load: Callable, item: Any, died: Callable) -> Any:  # noqa: ARG002
        return future.result()

    def release(self) -> None:
        self._pool.shutdown(wait=True, cancel_futures=True)


class DecodersUnavailable(RuntimeError):
    """Decoder processes started but did not answer (a script run without `if __name__ == "__main__"`,
    which `spawn` imports again in each child)."""


class ProcessDecoders:
    """`count` decoder processes, kept for the worker's next shards; `release` keeps them."""
    kind = "processes"

    def __init__(self, count: int):
        self.count = count
        self._pool = self._start(count)
        try:  # one decoder answering before any image is sent: a pool that cannot start is no place for them
            self._pool.submit(os.getpid).result(timeout=120)
        except (BrokenProcessPool, TimeoutError) as exc:
            self._pool.shutdown(wait=False, cancel_futures=True)
            raise DecodersUnavailable(f"{type(exc).__name__}: {exc}") from exc
        self._alone: ProcessPoolExecutor | None = None  # one decoder for the retries, started when needed

    @staticmethod
    def _start(count: int) -> ProcessPoolExecutor:
        return ProcessPoolExecutor(count, mp_context=multiprocessing.get_context(START_METHOD),
                                   initializer=_decoder_start, initargs=(os.getpid(),))

    def submit(self, load: Callable, item: Any) -> Future:
        task = (_with_storage_options, storage.storage_options(), load, item)
        try:
            return self._pool.submit(*task)
        except BrokenProcessPool:  # a decoder died since the last submit: a new pool for what follows
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = self._start(self.count)
            return self._pool.submit(*task)

    def result(self, future: Future, load: Callable, item: Any, died: Callable[[Any, str], Any]) -> Any:
        try:
            return future.result()
        except BrokenProcessPool:
            pass
        # Its decoder died, with this image or another in hand: this one again, alone.
        if self._alone is None:
            self._alone = self._start(1)
        try:
            return self._alone.submit(_with_storage_options, storage.storage_options(), load, item).result()
        except BrokenProcessPool:
            self._alone.shutdown(wait=False, cancel_futures=True)
            self._alone = None
            log.warning("an image killed its decoder process twice: refused")
            return died(item, "its decoder process died on it twice (killed, or out of memory)")

    def release(self) -> None:
        """Kept for the next shard of this worker."""

    def shutdown(self) -> None:
        for pool in (self._pool, self._alone):
            if pool is not None:
                pool.shutdown(wait=True, cancel_futures=True)


def can_have_children() -> bool:
    """False in a daemonic process (Python refuses it children): a Dask worker of a cluster xmdata
    did not start, with Dask's default `distributed.worker.daemon: True`."""
    return not multiprocessing.current_process().daemon


def default_count(gpu: bool = False) -> int:
    """The decoders a shard gets unless its params say: the cores it may use (runtime/cluster.shard_cores):
    every core of this process when it runs the shard alone (in-process), a worker's share
    (OMP_NUM_THREADS, as a LocalCluster sets it per worker), else its CPU affinity. A shard whose model
    runs on CUDA (`gpu`) needs little CPU of its own beside its decoders: on a Dask worker it gets the
    cores of its machine left after the other workers' running tasks (cluster.gpu_worker_cores), not
    its OMP share."""
    from xmdata.runtime.cluster import gpu_worker_cores, shard_cores

    if gpu:
        left = gpu_worker_cores()
        if left is not None:
            return left
    return shard_cores()


class WorkerDecoders:
    """This process's decoders, kept between shards as its models are (models/registry.MODELS)."""

    def __init__(self):
        self.processes: ProcessDecoders | None = None
        self.said_threads = False

    def get(self, count: int | None, keep_more: bool = False) -> ThreadDecoders | ProcessDecoders:
        count = count or default_count()
        if not can_have_children():
            if not self.said_threads:
                self.said_threads = True
                log.warning("this worker is a daemonic process, which cannot start decoder processes: decoding "
                            "in %d threads (a cluster xmdata starts runs non-daemonic workers)", count)
            return ThreadDecoders(count)
        kept = self.processes is not None and (self.processes.count == count or
                                               (keep_more and self.processes.count > count))
        if not kept:
            self.shutdown()
            try:
                self.processes = ProcessDecoders(count)
                PROCESS_ENDS.add(self.shutdown)  # a command forked by the service ends without exit handlers
                log.info("decoding in %d processes", count)
            except DecodersUnavailable as exc:
                log.warning("decoder processes did not start (%s): decoding in %d threads", exc, count)
                return ThreadDecoders(count)
        return self.processes

    def shutdown(self) -> None:
        if self.processes is not None:
            self.processes.shutdown()
            self.processes = None


WORKER = WorkerDecoders()


def worker_decoders(count: int | None, keep_more: bool = False) -> ThreadDecoders | ProcessDecoders:
    """This worker's decoder processes (started at the first call, again when the count changes; with
    `keep_more`, a pool of more than `count` is kept: a default that moves with the cluster's load, as a
    GPU worker's does, would otherwise restart it shard after shard), or threads in a process that
    cannot have children."""
    return WORKER.get(count, keep_more)


def shutdown_decoders() -> None:
    """Stop this process's decoders (tests; a worker's end stops them too)."""
    WORKER.shutdown()
