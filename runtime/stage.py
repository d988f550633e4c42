"""A stage is what runs on a shard: a plain function (table, params) -> (kept rows, rejects)."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa

from .. import __version__
from .atomic import hash_params
from .memo import MemoOptions, without
from .params import Params

StageFn = Callable[[pa.Table, "Params | dict"], "tuple[pa.Table, pa.Table]"]


@dataclass(frozen=True, eq=False)
class Stage:
    """Name, version and params decide whether a finished shard is still valid.

    Bump ``version`` when a change to ``fn`` changes its output: finished shards are then redone.
    ``inline_rows``: up to this many pending rows the stage runs in the calling process even when a
    warm cluster is at hand (light stages: shipping the work costs more than doing it).
    ``gpu``: its model runs on CUDA (`placement.needs_gpu(device)`); on a cluster with GPU workers it
    runs only there, and a stage without it stays off them (placement.py).
    ``memo_exclude``: params fields (dotted paths) that do not decide one unit's model result, left
    out of its memo key (runtime/memo.py); each is proven irrelevant by a test. Everything else in the
    params is in the key, so a field added later keys the memo by itself.
    ``memo_kinds``: the kinds of unit it keeps in the memo; each shard then says beside its record
    which units it took from the memo (`ShardPaths.memo_use`, read by `explain`).
    ``memo_gather``: its units go through the model in batches of one fixed shape, so a rebuild's few
    new units are computed together across its shards first (process.gather_new_units); a stage
    whose per-unit work has no batch to fill gains nothing from that and leaves it False.
    ``memo``: where this run's memo is, set by `run_shards` from the command (outside every hash).
    """

    name: str
    version: str
    fn: StageFn
    params: Params | dict = field(default_factory=dict)  # a model: its model_dump() is what is hashed
    inline_rows: int = 0
    gpu: bool = False
    memo_exclude: tuple[str, ...] = ()
    memo_kinds: tuple[str, ...] = ()
    memo_gather: bool = False
    memo: MemoOptions | None = None

    @property
    def code_version(self) -> str:
        return f"xmdata-{__version__}/{self.name}-{self.version}"

    @property
    def params_dump(self) -> dict:
        return self.params.model_dump() if isinstance(self.params, Params) else self.params

    @property
    def params_hash(self) -> str:
        return hash_params(self.params_dump)

    @property
    def memo_params(self) -> dict:
        """What of the params keys a unit's memo entry: all but `memo_exclude`."""
        return without(self.params_dump, self.memo_exclude)
