"""One context's units while a shard runs (runtime/memo.py): looked up, served or computed, audited,
written a model batch at a time — and what each cost (`Counts`), and what a gather may take on
(`GatherBudget`)."""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

from .memo_keys import MISSING, canonical, entry_check, unit_key
from .memo_store import MemoStore

# Entries are written at least this often (seconds of model work) or this many at a time: a file of
# a few entries would cost more in Parquet's footer than its entries; a kill loses at most this much.
FLUSH_SECONDS = 5.0
FLUSH_ENTRIES = 1024


class GatherDeclined(Exception):
    """A gather found more new units than it takes on (`GatherBudget`): the shards compute them."""


@dataclass
class GatherBudget:
    """What one gather takes on: the new units of every pending shard, computed together in shared
    batches, as long as they add up to at most one shard's worth — the units looked up so far over
    the shards. More than that, and computing them in one job would cost more wall time (the
    shards' jobs run side by side) than the partly filled batches it saves; the lookup that finds
    so many raises GatherDeclined before any of them is computed."""
    shards: int
    looked: int = 0
    new: int = 0

    def take(self, looked: int, new: int) -> None:
        self.looked, self.new = self.looked + looked, self.new + new
        if self.new > self.looked / self.shards:
            raise GatherDeclined(f"{self.new} new units of {self.looked} over {self.shards} shards")


class MemoAuditFailed(RuntimeError):
    """A memo entry differs from the model's result for the same input: the stage changed without a
    version bump, or the platform's numbers moved. Fails the shard, naming the unit."""


@dataclass
class Counts:
    served: int = 0
    computed: int = 0
    stored: int = 0
    bad: int = 0  # entries or files that failed their check: computed again
    audited: int = 0

    def add(self, other: "Counts") -> None:
        for name in self.__dataclass_fields__:
            setattr(self, name, getattr(self, name) + getattr(other, name))

    def as_dict(self) -> dict:
        return {k: v for k, v in vars(self).items() if v}


@dataclass
class UnitMemo:
    """One context's entries. Inputs are JSON-able (the exact model input); values are JSON-able."""
    memo_store: MemoStore  # the memo's entry store (`MemoOptions.store`)
    folder: str  # this context's, under the memo's top folder
    context: dict
    counts: Counts
    audit: float = 0.0
    audit_pending: dict = field(default_factory=dict)  # sampled hits held back, to compare with the model's
    waiting: dict = field(default_factory=dict)  # computed entries not written yet (`store`)
    served_keys: set = field(default_factory=set)  # what the shard took from the memo (`explain ROW` says it)
    waiting_since: float | None = None
    fresh: frozenset = frozenset()  # keys this build's gather computed (MemoOptions.fresh)
    budget: GatherBudget | None = None  # in a gather: how many new units it may take on
    stored_keys: set = field(default_factory=set)  # written by this UnitMemo (a gather's `fresh`)
    fresh_used: set = field(default_factory=set)  # the gather's keys this shard took
    audited_keys: set = field(default_factory=set)  # sampled hits computed again and found equal: used too

    @staticmethod
    def key(model_input) -> str:
        return unit_key(model_input)

    def lookup(self, inputs: Sequence) -> list:
        """A value per input, or MISSING. A sampled fraction of hits (`audit`) comes back MISSING
        too, to be computed and compared by `store` (`audit_pending`)."""
        keys = [self.key(x) for x in inputs]
        wanted = set(keys)
        found: dict[str, object] = {}
        by_file, bad_files = self.memo_store.keys_by_file(self.folder)
        self.counts.bad += bad_files
        for name, held in by_file.items():
            if not (held & wanted):
                continue
            try:
                rows = self.memo_store.read_entries(self.folder, name)
            except Exception:  # noqa: BLE001
                self.memo_store.forget(self.folder, name)
                self.counts.bad += 1
                continue
            for key, value, check in rows:
                if key not in wanted or key in found:
                    continue
                if entry_check(key, value) != check:
                    self.counts.bad += 1
                    continue
                try:
                    found[key] = json.loads(value)
                except ValueError:
                    self.counts.bad += 1
            self.memo_store.touch(self.folder, name)
        self.audit_pending.update({k: found.pop(k) for k in list(found) if self._audited(k) and k not in self.fresh})
        if self.budget is not None:  # a gather: more new units than it takes on stops it here, before the model
            self.budget.take(len(wanted), len(wanted - found.keys()))
        fresh = found.keys() & self.fresh  # computed by this build's gather a moment ago: computed, not served
        self.counts.served += len(found) - len(fresh)
        self.counts.computed += len(fresh)
        self.served_keys.update(found.keys() - fresh)
        self.fresh_used.update(fresh)
        return [found.get(k, MISSING) for k in keys]

    def holds(self, inputs: Sequence) -> list[bool]:
        """Whether an entry for each input is there, from the index alone (a dry run): an entry that
        would fail its check on read is counted as held."""
        held: set[str] = set()
        for keys in self.memo_store.keys_by_file(self.folder)[0].values():
            held |= keys
        return [self.key(x) in held for x in inputs]

    def _audited(self, key: str) -> bool:
        return self.audit > 0 and int(key[:8], 16) / 0xFFFFFFFF < self.audit

    def store(self, inputs: Sequence, values: Sequence) -> None:
        """Results the model has just computed for `inputs` (one batch; the caller counts them in
        `counts.computed`): compared with an audited hit's entry, then kept to be written. Written
        when FLUSH_SECONDS of model work or FLUSH_ENTRIES entries are waiting, and when the shard's
        function returns or fails (`shard_scope`): a kill loses at most that much work. Call only
        with results of batches that did not run out of memory."""
        audited = self.audit_pending
        for model_input, value in zip(inputs, values):
            key = self.key(model_input)
            encoded = canonical(value)
            if key in audited:
                self.counts.audited += 1
                stored = canonical(audited.pop(key))
                if stored != encoded:
                    raise MemoAuditFailed(
                        f"memo audit: {self.context['kind']} of {json.dumps(model_input, ensure_ascii=False)[:200]} "
                        f"was stored as {stored.decode()[:120]!r} and is now {encoded.decode()[:120]!r}; "
                        f"the stage ({self.context['stage']}) changed without a version "
                        f"bump or this platform's numbers differ: `xmdata memo prune --all` and build again")
                self.audited_keys.add(key)
                continue  # the entry is there already
            self.waiting[key] = encoded
        if self.waiting_since is None:
            self.waiting_since = time.monotonic()
        if len(self.waiting) >= FLUSH_ENTRIES or time.monotonic() - self.waiting_since >= FLUSH_SECONDS:
            self.flush()

    def flush(self) -> None:
        """Write what is waiting, as one file."""
        waiting, self.waiting, self.waiting_since = self.waiting, {}, None
        if waiting and (keys := self.memo_store.write(self.folder, self.context, waiting)) is not None:
            self.stored_keys.update(keys)
            self.counts.stored += len(waiting)


def served_and_computed(memo: "UnitMemo | None", inputs: Sequence, compute: Callable[[list[int]], tuple[list, bool]],
                        chunk: int, storable: Callable[[object], bool] = lambda value: True) -> list:
    """Values for every input: the memo's where it holds them, `compute(positions)` for the rest, an
    input that comes twice computed once — all in one call without a memo; with one, `chunk`
    positions a call, each call's results stored before the next. `compute` returns one value per position,
    in order, and whether they may be stored (False when a batch of theirs ran out of memory and was
    halved); `storable` refuses single values (a pair that failed alone)."""
    out = memo.lookup(inputs) if memo is not None else [MISSING] * len(inputs)
    missing = [i for i, value in enumerate(out) if value is MISSING]
    first: dict[bytes, int] = {}  # an input twice is computed once
    for i in missing:
        first.setdefault(canonical(inputs[i]), i)
    unique = list(first.values())
    step = chunk if memo is not None else max(1, len(unique))  # without a memo: one call, as before
    for start in range(0, len(unique), step):
        part = unique[start:start + step]
        values, whole = compute(part)
        for position, value in zip(part, values):
            out[position] = value
        if memo is not None:
            memo.counts.computed += len(part)
            keep = [(inputs[p], v) for p, v in zip(part, values) if storable(v)] if whole else []
            if keep:
                memo.store([x for x, _ in keep], [v for _, v in keep])
    for i in missing:
        out[i] = out[first[canonical(inputs[i])]]
    return out
