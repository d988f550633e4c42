"""Which memo a shard uses (runtime/memo.py): where it lives (`--memo`, XMDATA_MEMO), the command's
options and their entry store, and the scope one shard's stage function runs in — two context
variables, the command's options and the shard's scope, so that a stage asks `unit_memo(kind, …)`
without taking the memo through its signature."""
from __future__ import annotations

import contextlib
import contextvars
import os
from dataclasses import dataclass, field
from typing import Iterator

from . import settings, storage
from .memo_keys import context_folder
from .memo_store import MemoStore
from .memo_units import Counts, GatherBudget, UnitMemo

OFF = "off"


def resolve_location(flag: str | None = None) -> str | None:
    """`--memo` (a folder, a URL or `off`), else XMDATA_MEMO, else XMDATA_CACHE/memo; None: off."""
    raw = flag if flag is not None else settings.MEMO.get()
    if raw is None or not str(raw).strip():
        return os.path.join(settings.CACHE.get(), "memo")
    raw = str(raw).strip()
    if raw.lower() == OFF:
        return None
    return storage.absolute(os.path.expanduser(raw) if not storage.is_url(raw) else raw)


def check_location(location: str | None) -> str | None:
    """Refuse, before anything starts, a memo that can never be read; returns a line to say when the
    memo can only be read (it is then read and not written), else None."""
    if location is None or storage.is_url(location):
        return None  # a store's permissions show on the first write, which then stops writing
    from xmdata.schemas.contract import ContractError

    if os.path.exists(location) and not os.path.isdir(location):
        raise ContractError(f"--memo {location}: exists and is not a folder (or --memo off)")
    parent = location
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ContractError(f"--memo {location}: {parent} is a file, not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        return f"xmdata: warning: memo {location} is not writable: its entries are read, new results are not stored"
    return None


@dataclass(frozen=True)
class MemoOptions:
    """Where the memo lives (None: off) and what fraction of its hits to compute again and compare.
    `fresh`: the keys this build's gather has just computed (`gather_new_units`): the shards take
    them from the memo but count them as computed by this build, not served by an earlier one.
    `store`: its entry store, made here and kept by `dataclasses.replace`, so that every shard of a
    command shares what it knows of the memo's files (outside equality: options are their fields)."""
    location: str | None
    audit: float = 0.0
    fresh: frozenset = frozenset()
    store: MemoStore | None = field(default=None, compare=False, repr=False)

    def __post_init__(self):
        if not 0.0 <= self.audit <= 1.0:
            raise ValueError(f"a memo audit is a fraction from 0 to 1, got {self.audit}")
        if self.location is None:
            object.__setattr__(self, "store", None)
        elif self.store is None or self.store.location != self.location:
            object.__setattr__(self, "store", MemoStore(self.location))


_options: contextvars.ContextVar[MemoOptions | None] = contextvars.ContextVar("xmdata_memo", default=None)


@contextlib.contextmanager
def using(options: MemoOptions) -> Iterator[MemoOptions]:
    """The memo of every stage that starts inside the block (a command's `--memo`)."""
    token = _options.set(options)
    try:
        yield options
    finally:
        _options.reset(token)


def current_options() -> MemoOptions:
    """The command's memo, else the environment's (a run started from the UI or a Python caller)."""
    return _options.get() or MemoOptions(resolve_location())


@dataclass
class ShardScope:
    """The memo while one shard's stage function runs: its options, the stage's identity, and what
    each kind of unit cost (`counts`, returned with the shard's outcome)."""
    options: MemoOptions
    stage_version: str
    params: dict
    counts: dict[str, Counts] = field(default_factory=dict)
    memos: list = field(default_factory=list)  # the UnitMemos opened by the shard: flushed when it ends
    budget: GatherBudget | None = None  # a gather's (process.gather_new_units); None for a shard
    keyed_by: dict = field(default_factory=dict)  # what `explain` needs to make a row's keys again (`note_keying`)


_scope: contextvars.ContextVar[ShardScope | None] = contextvars.ContextVar("xmdata_memo_shard", default=None)


@contextlib.contextmanager
def shard_scope(options: MemoOptions | None, stage_version: str, params: dict,
                budget: GatherBudget | None = None) -> Iterator[ShardScope]:
    """`params`: the stage's params dump less its `memo_exclude` fields; `budget`: a gather's."""
    scope = ShardScope(options or MemoOptions(None), stage_version, params, budget=budget)
    token = _scope.set(scope)
    try:
        yield scope
    finally:
        _scope.reset(token)
        for unit_memo in scope.memos:  # what the shard computed is kept, even when the shard failed after
            unit_memo.flush()


def note_keying(**facts) -> None:
    """What, besides a row's own columns, made its units' keys (scoring: the prefix before a text, the
    image root): kept in the shard's use file, so that `explain ROW` can say whether its units were
    served. Nothing when no shard runs."""
    scope = _scope.get()
    if scope is not None:
        scope.keyed_by.update(facts)


def active() -> bool:
    """Whether a shard runs now with its memo on (before any model is hashed for a key)."""
    scope = _scope.get()
    return scope is not None and scope.options.location is not None


def unit_memo(kind: str, context: dict) -> UnitMemo | None:
    """The memo of units of `kind` for the shard running now, in the stage's context plus `context`
    (the models' content hashes, the platform: tasks/build/unit_memo.py); None when the memo is off
    or no shard is running (a stage function called directly)."""
    scope = _scope.get()
    if scope is None or scope.options.location is None:
        return None
    whole = {"kind": kind, "stage": scope.stage_version, "params": scope.params, **context}
    counts = scope.counts.setdefault(kind, Counts())
    opened = UnitMemo(scope.options.store, context_folder(scope.options.location, whole), whole, counts,
                      scope.options.audit, fresh=scope.options.fresh, budget=scope.budget)
    scope.memos.append(opened)
    return opened
