"""A memo of model work per unit, content-addressed and shared by every build (Bazel's action cache,
Prefect's INPUTS cache policy, applied to one beam search or one COMETKiwi score rather than a task).

A unit is one model input: a (text, source, target) for beam search, a (source, candidate) for
COMETKiwi. Its entry is found by two hashes:

- the **context**: everything that decides a result besides the input, said by the stage that uses
  the memo (`UnitContext`): the stage's code version, its params less the fields the stage declares
  irrelevant to one unit (`Stage.memo_exclude`, each proven by a test), each model's content hash,
  the library versions and the platform facts a release manifest records. Never a row id, a shard
  number, a path or a host. One context is one folder: `MEMO/<kind>/<ab>/<context sha256>/`.
- the **key**: the sha256 of the exact model input.

Entries are written a model batch at a time, one Parquet file a batch, atomically, named by the
hash of their content: a kill loses at most a batch; two builds storing one key at once both write
a whole file, and either serves it. Every entry carries the sha256 of its key and value, checked on
read: a bad entry (or an unreadable file) is counted and computed again, never served. A lookup
lists the context's folder once and reads the files that hold wanted keys (never an object a key).

Results of a batch that ran out of memory are never stored (a halved batch may change the numbers,
token_batches.py). What the memo did is reported beside the build (the stage's run counts, the
command's output, the Prefect run), never in a completion record or a release's hashes: a build with
and without the memo writes the same bytes.
"""
from __future__ import annotations

import contextlib
import contextvars
import errno
import hashlib
import json
import logging
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Callable, Iterator, Sequence

from . import settings, storage

log = logging.getLogger("xmdata.memo")
OFF = "off"
MISSING = object()  # a lookup's answer for a key the memo does not hold (a stored value may be None)
ENTRY_SUFFIX = ".parquet"
# Entries are written at least this often (seconds of model work) or this many at a time: a file of
# a few entries would cost more in Parquet's footer than its entries; a kill loses at most this much.
FLUSH_SECONDS = 5.0
FLUSH_ENTRIES = 1024
CONTEXT_FILE = "context.json"


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
    them from the memo but count them as computed by this build, not served by an earlier one."""
    location: str | None
    audit: float = 0.0
    fresh: frozenset = frozenset()

    def __post_init__(self):
        if not 0.0 <= self.audit <= 1.0:
            raise ValueError(f"a memo audit is a fraction from 0 to 1, got {self.audit}")


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


def shard_use(scope: ShardScope) -> dict:
    """What a shard took from the memo and gave it, for `<stage>/_memo/<shard>.json` beside its
    record (never in it): the memo, the keys of the units an earlier build computed (`served`:
    what `explain ROW` reads) and of those this build computed (`computed`), by kind — together
    what `memo prune --keep-used-by` keeps."""
    served: dict[str, set] = {}
    computed: dict[str, set] = {}
    contexts: dict[str, set] = {}
    for unit_memo in scope.memos:
        kind = unit_memo.context["kind"]
        served.setdefault(kind, set()).update(unit_memo.served_keys)
        computed.setdefault(kind, set()).update(unit_memo.stored_keys | unit_memo.fresh_used | unit_memo.audited_keys)
        contexts.setdefault(kind, set()).add(unit_memo.folder.rstrip("/").rsplit("/", 1)[-1])
    listed = lambda found: {kind: sorted(keys) for kind, keys in sorted(found.items())}  # noqa: E731
    return {"memo": scope.options.location, "served": listed(served), "computed": listed(computed),
            "contexts": listed(contexts), **({"keyed_by": scope.keyed_by} if scope.keyed_by else {})}


ANY_CONTEXT = "*"
USE_FOLDER = "_memo"  # `<stage>/_memo/<shard>.json` in an output: what each shard took and gave


def used_by(outputs: Sequence[str]) -> dict[tuple[str, str], set[str]]:
    """The entries the builds of `outputs` (output or release folders) took from the memo or put
    in it, from their shards' use files: {(kind, context folder): keys}. An output with no use file
    (built with the memo off, or before it) is refused: keeping by it would keep nothing."""
    from xmdata.schemas.contract import ContractError

    used: dict[tuple[str, str], set[str]] = {}
    for output in outputs:
        uses = []
        for path in _use_files(output):
            try:
                uses.append(json.loads(storage.read_text(path)))
            except (OSError, ValueError) as exc:
                raise ContractError(f"--keep-used-by {output}: {path} cannot be read ({exc})") from None
        if not any(use.get("memo") for use in uses):
            raise ContractError(f"--keep-used-by {output}: no record of memo use under it (`{USE_FOLDER}/` "
                                f"beside its shards): built with --memo off, before the memo, or not an output")
        for use in uses:
            for kind in set(use.get("served", {})) | set(use.get("computed", {})):
                keys = set(use.get("served", {}).get(kind, ())) | set(use.get("computed", {}).get(kind, ()))
                # A use file written before contexts were recorded keeps its keys in any context.
                for context in use.get("contexts", {}).get(kind, [ANY_CONTEXT]):
                    used.setdefault((kind, context), set()).update(keys)
    return used


def _use_files(output: str) -> list[str]:
    if storage.is_url(output):
        fs, inner = storage.filesystem(output)
        protocol = output.split("://", 1)[0]
        return sorted(f"{protocol}://{p}" for p in fs.glob(f"{inner.rstrip('/')}/**/{USE_FOLDER}/*.json"))
    return sorted(os.path.join(folder, name) for folder, _, names in os.walk(output)
                  if os.path.basename(folder) == USE_FOLDER for name in names
                  if name.endswith(".json") and not name.startswith("."))


def without(params: dict, excluded: Sequence[str]) -> dict:
    """`params` less the dotted paths `excluded` ("translator.name_or_path")."""
    out = json.loads(json.dumps(params, default=str))
    for path in excluded:
        *parents, last = path.split(".")
        node = out
        for name in parents:
            node = node.get(name) if isinstance(node, dict) else None
        if isinstance(node, dict):
            node.pop(last, None)
    return out


def canonical(obj) -> bytes:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str).encode()


def dry_run_text(location: str | None, headers: tuple[str, str], rows: dict[str, dict], computed: str) -> str:
    """A dry run's table: per row (a target, a kind of unit) the units a build needs, how many the memo
    holds and how many are left to compute (`{"units", "in_memo", "to_compute"}`), then the total;
    `computed`: what the total counts and why it is an upper bound."""
    name, units = headers
    width = max(8, len(name) + 2, *(len(row) + 2 for row in rows))
    lines = [f"dry run: nothing computed or written; memo {location or 'off'}",
             f"{name:<{width}}{units:>15}{'in the memo':>13}{'to compute':>12}"]
    lines += [f"{row:<{width}}{n['units']:>15,}{n['in_memo']:>13,}{n['to_compute']:>12,}" for row, n in rows.items()]
    lines.append(f"at most {sum(n['to_compute'] for n in rows.values()):,} {computed}")
    return "\n".join(lines)


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


def unit_memo(kind: str, context: dict) -> "UnitMemo | None":
    """The memo of units of `kind` for the shard running now, in the stage's context plus `context`
    (the models' content hashes, the platform: tasks/build/unit_memo.py); None when the memo is off
    or no shard is running (a stage function called directly)."""
    scope = _scope.get()
    if scope is None or scope.options.location is None:
        return None
    whole = {"kind": kind, "stage": scope.stage_version, "params": scope.params, **context}
    digest = hashlib.sha256(canonical(whole)).hexdigest()
    counts = scope.counts.setdefault(kind, Counts())
    opened = UnitMemo(scope.options.location, storage.join(scope.options.location, kind, digest[:2], digest), whole,
                      counts, scope.options.audit, fresh=scope.options.fresh, budget=scope.budget)
    scope.memos.append(opened)
    return opened


def _entry_check(key: str, value: bytes) -> str:
    return hashlib.sha256(key.encode() + b"\0" + value).hexdigest()


class _Index:
    """Per process: which entry file of a context folder holds which keys. Entry files never change
    (named by their content), so a file read once is not read again; a folder is listed per lookup."""

    def __init__(self):
        self._lock = threading.Lock()
        self._files: dict[str, dict[str, set[str]]] = {}  # folder -> file name -> keys
        self._bad: dict[str, set[str]] = {}  # folder -> files that could not be read

    def keys_by_file(self, folder: str) -> tuple[dict[str, set[str]], int]:
        """{file: keys} of the folder now, and how many of its files were unreadable (new ones)."""
        names = sorted(n for n in storage.listdir(folder) if n.endswith(ENTRY_SUFFIX) and not n.startswith("."))
        with self._lock:
            known = self._files.setdefault(folder, {})
            bad = self._bad.setdefault(folder, set())
            new_bad = 0
            for name in names:
                if name in known or name in bad:
                    continue
                try:
                    keys = storage.read_parquet(storage.join(folder, name), columns=["key"]).column("key").to_pylist()
                    known[name] = set(keys)
                except Exception:  # noqa: BLE001 - truncated, not Parquet, gone: computed again, counted
                    bad.add(name)
                    new_bad += 1
            present = set(names)
            for gone in [n for n in known if n not in present]:  # pruned meanwhile
                del known[gone]
            return {n: known[n] for n in names if n in known}, new_bad

    def forget(self, folder: str, name: str) -> None:
        with self._lock:
            self._files.get(folder, {}).pop(name, None)
            self._bad.setdefault(folder, set()).add(name)


INDEX = _Index()


class _NotWritable:
    """Locations found unwritable in this process (read-only, full): said once, then only read."""

    def __init__(self):
        self._lock = threading.Lock()
        self._said: set[str] = set()

    def mark(self, location: str, reason: str) -> None:
        with self._lock:
            if location not in self._said:
                self._said.add(location)
                log.warning("memo %s: %s; its entries are read, new results are not stored", location, reason)

    def __contains__(self, location: str) -> bool:
        return location in self._said


NOT_WRITABLE = _NotWritable()


@dataclass
class UnitMemo:
    """One context's entries. Inputs are JSON-able (the exact model input); values are JSON-able."""
    location: str  # the memo's top folder
    folder: str  # this context's, under it
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
        return hashlib.sha256(canonical(model_input)).hexdigest()

    def lookup(self, inputs: Sequence) -> list:
        """A value per input, or MISSING. A sampled fraction of hits (`audit`) comes back MISSING
        too, to be computed and compared by `store` (`audit_pending`)."""
        keys = [self.key(x) for x in inputs]
        wanted = set(keys)
        found: dict[str, object] = {}
        by_file, bad_files = INDEX.keys_by_file(self.folder)
        self.counts.bad += bad_files
        for name, held in by_file.items():
            if not (held & wanted):
                continue
            path = storage.join(self.folder, name)
            try:
                table = storage.read_parquet(path)
                rows = zip(*(table.column(c).to_pylist() for c in ("key", "value", "check")))
            except Exception:  # noqa: BLE001
                INDEX.forget(self.folder, name)
                self.counts.bad += 1
                continue
            for key, value, check in rows:
                if key not in wanted or key in found:
                    continue
                if _entry_check(key, value) != check:
                    self.counts.bad += 1
                    continue
                try:
                    found[key] = json.loads(value)
                except ValueError:
                    self.counts.bad += 1
            if not storage.is_url(path):
                with contextlib.suppress(OSError):
                    os.utime(storage.local(path))  # last used: what `memo prune --older-than` reads
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
        for keys in INDEX.keys_by_file(self.folder)[0].values():
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
        if waiting:
            self._write(waiting)

    def _write(self, entries: dict[str, bytes]) -> None:
        location = self.location
        if location in NOT_WRITABLE:
            return
        import pyarrow as pa

        from .atomic import write_json_atomic, write_parquet_atomic

        name, table = entry_file(entries)
        keys = table.column("key").to_pylist()
        try:
            if not storage.is_url(self.folder):
                make_private_folder(location)
                os.makedirs(self.folder, mode=0o700, exist_ok=True)
            context_file = storage.join(self.folder, CONTEXT_FILE)
            if storage.is_url(context_file) or not os.path.exists(context_file):
                write_json_atomic(self.context, context_file)
            write_parquet_atomic(table, storage.join(self.folder, name))
            self.stored_keys.update(keys)
        except OSError as exc:
            reason = {errno.ENOSPC: "the disk is full", errno.EROFS: "read-only file system",
                      errno.EACCES: "not writable", errno.EPERM: "not writable",
                      errno.EDQUOT: "over quota"}.get(exc.errno, f"{type(exc).__name__}: {exc}")
            NOT_WRITABLE.mark(location, reason)
            return
        self.counts.stored += len(entries)


def entry_file(entries: dict[str, bytes]):
    """(name, table) of the entry file holding `entries` (key -> encoded value): named by its content."""
    import pyarrow as pa

    keys = sorted(entries)
    table = pa.table({"key": pa.array(keys, pa.string()),
                      "value": pa.array([entries[k] for k in keys], pa.binary()),
                      "check": pa.array([_entry_check(k, entries[k]) for k in keys], pa.string())})
    return hashlib.sha256(b"".join(k.encode() + entries[k] for k in keys)).hexdigest()[:40] + ENTRY_SUFFIX, table


def make_private_folder(path: str) -> None:
    """The memo's top folder, 0700 when this process makes it (results of a user's runs)."""
    if not os.path.isdir(path):
        os.makedirs(path, mode=0o700, exist_ok=True)
        os.chmod(path, 0o700)


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


RUNS = "runs"  # a file per build that used the memo: what `memo stats` shows as recent runs
RECENT_RUNS = 10


def record_run(options: MemoOptions, command: str, out: str, stages: dict[str, dict]) -> None:
    """What a build's stages took from the memo and gave it, beside the memo (never in the output's
    hashes); best effort: a memo that cannot be written does not fail the build."""
    used = {stage: units for stage, units in stages.items() if units}
    if options.location is None or not used:
        return
    import datetime as dt

    from .atomic import write_json_atomic

    now = dt.datetime.now(dt.timezone.utc)
    name = f"{now.strftime('%Y%m%dT%H%M%S.%fZ')}-{os.getpid()}.json"
    try:
        if not storage.is_url(options.location):
            make_private_folder(options.location)
        write_json_atomic({"finished": now.isoformat(timespec="seconds"), "command": command, "out": out,
                           "stages": used}, storage.join(options.location, RUNS, name))
    except OSError as exc:
        NOT_WRITABLE.mark(options.location, f"{type(exc).__name__}: {exc}")


@dataclass(frozen=True)
class EntryFile:
    path: str
    size: int
    used: float  # last written or served (POSIX seconds)
    kind: str


def entry_files(location: str) -> list[EntryFile]:
    """Every entry file of the memo, with its kind (the folder under the memo's top)."""
    found = []
    if storage.is_url(location):
        fs, inner = storage.filesystem(location)
        protocol = location.split("://", 1)[0]
        try:
            listed = fs.find(inner, detail=True)
        except FileNotFoundError:
            return []
        for path, info in listed.items():
            rel = path[len(inner.rstrip("/")) + 1:]
            if rel.endswith(ENTRY_SUFFIX) and not rel.startswith(RUNS + "/"):
                modified = info.get("LastModified") or info.get("mtime") or 0
                used = modified.timestamp() if hasattr(modified, "timestamp") else float(modified)
                found.append(EntryFile(f"{protocol}://{path}", int(info.get("size") or 0), used, rel.split("/")[0]))
        return found
    for folder, _, names in os.walk(location):
        rel = os.path.relpath(folder, location)
        for name in names:
            if name.endswith(ENTRY_SUFFIX) and not name.startswith(".") and rel.split(os.sep)[0] != RUNS:
                path = os.path.join(folder, name)
                with contextlib.suppress(FileNotFoundError):
                    stat = os.stat(path)
                    found.append(EntryFile(path, stat.st_size, stat.st_mtime, rel.split(os.sep)[0]))
    return found


def stats(location: str) -> dict:
    """Entries and bytes per kind of unit, and the recent runs' hits (newest first)."""
    kinds: dict[str, dict] = {}
    for entry in entry_files(location):
        row = kinds.setdefault(entry.kind, {"contexts": set(), "files": 0, "entries": 0, "bytes": 0})
        row["contexts"].add(entry.path.rsplit("/", 1)[0])  # the context's folder
        row["files"] += 1
        row["bytes"] += entry.size
        try:
            row["entries"] += storage.parquet_rows(entry.path)
        except Exception:  # noqa: BLE001 - a torn file: counted as a file, holds nothing servable
            row["unreadable"] = row.get("unreadable", 0) + 1
    for row in kinds.values():
        row["contexts"] = len(row["contexts"])
    runs = []
    for name in sorted(storage.listdir(storage.join(location, RUNS)), reverse=True)[:RECENT_RUNS]:
        if name.endswith(".json") and not name.startswith("."):
            with contextlib.suppress(OSError, ValueError):
                runs.append(json.loads(storage.read_text(storage.join(location, RUNS, name))))
    return {"location": location, "kinds": dict(sorted(kinds.items())), "recent_runs": runs}


def prune(location: str, older_than_days: float | None = None, max_bytes: int | None = None,
          everything: bool = False, now: float | None = None,
          keep: dict[tuple[str, str], set[str]] | None = None, dry_run: bool = False) -> dict:
    """Remove entries not used by the outputs `keep` was read from (`used_by`; a file holding some of
    them is written again with those only), then entry files unused for `older_than_days` (a hit
    counts as a use), then the least recently used until the memo holds at most `max_bytes`, or all
    (`everything`). A pruned entry is computed again by the next build that needs it. Returns what
    was removed and what is left; `dry_run`: what would be, removing and writing nothing, with what
    would go per kind (`going`: files, entries and bytes)."""
    import time

    now = time.time() if now is None else now
    going: dict[str, dict[str, int]] = {}
    rewritten: dict[str, tuple[EntryFile | None, int]] = {}  # a dry run's: path -> (what keep leaves, its entries)
    removed_entries = _keep_only(location, keep, going, rewritten if dry_run else None) if keep is not None else 0
    files = sorted(entry_files(location), key=lambda e: e.used)
    if dry_run:  # the memo as keep would have left it
        files = [after for e in files if (after := rewritten.get(e.path, (e, 0))[0]) is not None]
    doomed = set()
    for entry in files:
        if everything or (older_than_days is not None and now - entry.used > older_than_days * 86400):
            doomed.add(entry.path)
    if max_bytes is not None:
        left = sum(e.size for e in files if e.path not in doomed)
        for entry in files:  # least recently used first
            if left <= max_bytes:
                break
            if entry.path not in doomed:
                doomed.add(entry.path)
                left -= entry.size
    kept = [e for e in files if e.path not in doomed]
    if dry_run:
        counts = {after.path: n for after, n in rewritten.values() if after is not None}
        for entry in (e for e in files if e.path in doomed):
            _add_going(going, entry.kind, 1, counts[entry.path] if entry.path in counts else _rows(entry), entry.size)
        done = {"dry_run": True, "removed_files": len(doomed),
                "removed_bytes": sum(e.size for e in files if e.path in doomed), "kept_files": len(kept),
                "kept_bytes": sum(e.size for e in kept), "going": dict(sorted(going.items()))}
        return {**done, "removed_entries": removed_entries} if keep is not None else done
    removed_bytes = 0
    for entry in files:
        if entry.path in doomed:
            with contextlib.suppress(FileNotFoundError):
                storage.remove(entry.path)
                removed_bytes += entry.size
    runs = storage.join(location, RUNS)
    for name in sorted(storage.listdir(runs))[:None if everything else -RECENT_RUNS]:  # the newest kept
        with contextlib.suppress(FileNotFoundError):
            storage.remove(storage.join(runs, name))
    if not storage.is_url(location):
        _remove_stray_and_empty(location, now)
    done = {"removed_files": len(doomed), "removed_bytes": removed_bytes, "kept_files": len(kept),
            "kept_bytes": sum(e.size for e in kept)}
    return {**done, "removed_entries": removed_entries} if keep is not None else done


KEEP_RECENT_S = 3600  # `--keep-used-by` leaves entry files written or served this recently


def _rows(entry: EntryFile) -> int:
    """The entries an entry file holds; 0 for a torn one (it serves nothing)."""
    try:
        return storage.parquet_rows(entry.path)
    except Exception:  # noqa: BLE001 - as stats counts a torn file
        return 0


def _add_going(going: dict, kind: str, files: int, entries: int, nbytes: int) -> None:
    row = going.setdefault(kind, {"files": 0, "entries": 0, "bytes": 0})
    row["files"], row["entries"], row["bytes"] = row["files"] + files, row["entries"] + entries, row["bytes"] + nbytes


def _keep_only(location: str, keep: dict[tuple[str, str], set[str]], going: dict,
               rewritten: dict | None = None) -> int:
    """Entries no kept output used, removed: a file of none of them deleted, a file of some written
    again with those only (named by its new content) before the old one goes. Returns how many, and
    adds them to `going` per kind (a rewritten file: the bytes it shrinks by). `rewritten`: a dry run,
    writing nothing: {old path: (the file left, None if none; its entries)} instead."""
    from .atomic import parquet_bytes, write_parquet_atomic

    import time

    import pyarrow as pa

    removed, recent = 0, time.time() - KEEP_RECENT_S
    for entry in entry_files(location):
        if entry.used > recent:  # written or served within the hour: a build running now may need it
            continue
        folder = entry.path.rsplit("/", 1)[0]  # MEMO/<kind>/<ab>/<context>/<file>
        wanted = keep.get((entry.kind, folder.rsplit("/", 1)[-1]), set()) | keep.get((entry.kind, ANY_CONTEXT), set())
        try:
            table = storage.read_parquet(entry.path)
        except pa.ArrowInvalid:  # a torn file serves nothing: it goes
            table = None
        except OSError:  # not readable now (a store's timeout, permissions): kept, never removed on a guess
            continue
        keys = table.column("key").to_pylist() if table is not None else []
        held = [i for i, key in enumerate(keys) if key in wanted]
        if len(held) == len(keys) and table is not None:
            continue
        left, left_size = None, 0
        if held:
            values = table.column("value").to_pylist()
            name, part = entry_file({keys[i]: values[i] for i in held})
            if rewritten is None:
                write_parquet_atomic(part, storage.join(folder, name))
            else:
                left_size = len(parquet_bytes(part))
                left = EntryFile(storage.join(folder, name), left_size, time.time(), entry.kind)
        if rewritten is None:
            with contextlib.suppress(FileNotFoundError):
                storage.remove(entry.path)
        else:
            rewritten[entry.path] = (left, len(held))
        _add_going(going, entry.kind, 0 if held else 1, len(keys) - len(held), entry.size - left_size)
        removed += len(keys) - len(held)
    return removed


def _remove_stray_and_empty(location: str, now: float, stray_after_s: float = 3600) -> None:
    """Temp files of writes a kill interrupted (older than an hour: no live writer takes that long
    for one batch), and context folders left without entries."""
    for folder, _, names in os.walk(location, topdown=False):
        for name in names:
            path = os.path.join(folder, name)
            if name.startswith(".tmp-") and name.endswith(".part"):
                with contextlib.suppress(FileNotFoundError):
                    if now - os.stat(path).st_mtime > stray_after_s:
                        os.unlink(path)
        if folder != location and os.path.basename(folder) != RUNS:
            left = os.listdir(folder)
            if left in ([], [CONTEXT_FILE]):
                with contextlib.suppress(OSError):
                    for name in left:
                        os.unlink(os.path.join(folder, name))
                    os.rmdir(folder)
