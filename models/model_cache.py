"""The models one process holds, as one object: `registry.MODELS`.

Lifecycle: `get` loads a model on first use (one per (kind, spec) per process: in a Dask worker,
reused by every shard it runs) and, past XMDATA_MODEL_MEMORY_GB of parameters, releases the least
recently used; in a Dask worker a watcher thread releases all of them after XMDATA_MODEL_IDLE_MINUTES
without a shard; `release_all` drops everything now. A release collects garbage and hands memory
back; a load that releases nothing does not.
"""
from __future__ import annotations

import contextlib
import ctypes
import gc
import sys
import threading
import time
from collections import OrderedDict
from typing import Callable


class ModelCache:
    def __init__(self):
        self._loaded: OrderedDict[tuple, object] = OrderedDict()  # least recently used first
        self._lock = threading.Lock()
        self.load_count = 0  # loads done; tests read it to prove reuse
        self.load_seconds = 0.0  # time spent loading (imports included), reported apart from the work
        self.released: list[tuple[str, str]] = []  # (kind, name) the latest release dropped
        self._last_used = 0.0  # time.monotonic() of the last get, or of a look that found a shard running
        self._watcher: threading.Thread | None = None  # releases the models once idle; runs while some are held

    def get(self, kind: str, spec, load: Callable[[], object]):
        """The model for (kind, spec), made with `load()` on first use."""
        from xmdata.runtime import settings

        key = (kind, spec)
        with self._lock:
            if key not in self._loaded:
                started = time.perf_counter()
                model = load()
                self.load_seconds += time.perf_counter() - started
                self._loaded[key] = model
                self.load_count += 1
                self._release_beyond(settings.MODEL_MEMORY_GB.get() * 1e9, keep=key)
                self._watch_idle(settings.MODEL_IDLE_MINUTES.get() * 60)
            self._loaded.move_to_end(key)
            self._last_used = time.monotonic()
            return self._loaded[key]

    def peek(self, kind: str, spec):
        """The model if loaded, else None; loads nothing."""
        with self._lock:
            return self._loaded.get((kind, spec))

    def put(self, kind: str, spec, model) -> None:
        """Hold a model made elsewhere (a benchmark's own weights) as if `get` had loaded it."""
        with self._lock:
            self._loaded[(kind, spec)] = model

    def loaded(self) -> list[dict]:
        """What this process holds, least recently used first (for `xmdata status`)."""
        with self._lock:
            return [{"kind": kind, "model": spec.name_or_path, "bytes": model_bytes(model)}
                    for (kind, spec), model in self._loaded.items()]

    def release_all(self) -> list[tuple[str, str]]:
        """Drop every model and give their memory back; returns what was dropped."""
        with self._lock:
            dropped = self._drop([*self._loaded])
        if dropped:
            free_memory()
        return dropped

    def _drop(self, keys: list[tuple]) -> list[tuple[str, str]]:
        """Under the lock: forget `keys`; `released` then says what this release dropped."""
        for key in keys:
            del self._loaded[key]
        self.released = [(kind, spec.name_or_path) for kind, spec in keys]
        return self.released

    def _release_beyond(self, limit: float, keep) -> None:
        """Release least recently used models until the rest fit in `limit` (never the one just loaded)."""
        sizes = {key: model_bytes(model) for key, model in self._loaded.items()}
        dropped = []
        for key in list(self._loaded):
            if sum(sizes.values()) <= limit:
                break
            if key != keep and sizes[key] > 0:  # releasing what holds no weights frees nothing
                dropped.append(key)
                del sizes[key]
        if dropped:
            self._drop(dropped)
            free_memory()

    def _watch_idle(self, idle_s: float) -> None:
        """Under the lock, after a load: start the thread that releases the models once idle. Only a
        Dask worker's: a command's own process ends with its run, and one of its shards may outlast
        the idle time (the models it asked for at its start would be loaded again after it)."""
        if self._watcher is None and idle_s < float("inf") and (worker := _this_dask_worker()) is not None:
            self._watcher = threading.Thread(target=self._release_when_idle, args=(idle_s, worker),
                                             name="xmdata-model-idle", daemon=True)
            self._watcher.start()

    def _release_when_idle(self, idle_s: float, worker) -> None:
        """Release every model once no shard has asked for one, and none has run on WORKER, for `idle_s`:
        a running shard holds the models it asked for at its start, however long ago that was."""
        while True:
            time.sleep(min(max(idle_s / 4, 0.5), 30.0))
            with self._lock:
                if worker.state.executing_count:
                    self._last_used = time.monotonic()
                elif not self._loaded or time.monotonic() - self._last_used >= idle_s:
                    self._watcher = None  # the next load starts another
                    dropped = self._drop([*self._loaded])
                    break
        if dropped:
            free_memory()


def model_bytes(model) -> int:
    """Parameter and buffer bytes of a loaded model's torch modules (0 for non-torch models)."""
    if "torch" not in sys.modules:
        return 0
    import torch

    modules = [v for v in vars(model).values() if isinstance(v, torch.nn.Module)]
    return sum(t.numel() * t.element_size() for m in modules for t in [*m.parameters(), *m.buffers()])


def free_memory() -> None:
    """Collect the dropped models, empty torch's CUDA cache, and hand the freed heap back to the
    system (glibc keeps it otherwise, and the process's RSS would not fall)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_initialized():
        torch.cuda.empty_cache()
    with contextlib.suppress(OSError, AttributeError):  # not glibc: nothing to trim
        ctypes.CDLL("libc.so.6").malloc_trim(0)


def _this_dask_worker():
    """The Dask worker whose task loads a model (Dask's `get_worker`), None outside one."""
    worker = sys.modules.get("distributed.worker")
    if worker is None:
        return None
    try:
        return worker.get_worker()
    except ValueError:  # not in a worker's task: a command's own process
        return None
