"""A memo of model work per unit, content-addressed and shared by every build (Bazel's action cache,
Prefect's INPUTS cache policy, applied to one beam search or one COMETKiwi score rather than a task).

A unit is one model input: a (text, source, target) for beam search, a (source, candidate) for
COMETKiwi. Its entry is found by two hashes:

- the **context**: everything that decides a result besides the input, said by the stage that uses
  the memo (`unit_memo(kind, context)`): the stage's code version, its params less the fields the stage declares
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

The memo by role, one file each; this module is their public names in one place:

- `memo_keys.py`: a unit's key, its context's folder, an entry's check, an entry file's name;
- `memo_scope.py`: where the memo lives, the command's `MemoOptions` and the shard's scope (two
  context variables), from which a stage opens `unit_memo(kind, …)`;
- `memo_store.py`: the entry store, `MemoStore`, carried by the options: what it knows of the
  entry files (read once each) and whether the memo can be written;
- `memo_units.py`: one context's `UnitMemo` in a shard — lookup, audit, store, flush — its `Counts`
  and a gather's `GatherBudget`;
- `memo_use.py`: what builds took and gave (shards' use files, the memo's run files);
- `memo_maintenance.py`: `stats` and `prune`.
"""
from __future__ import annotations

from .memo_keys import MISSING, canonical, entry_check, without
from .memo_maintenance import entry_files, prune, stats
from .memo_scope import (MemoOptions, ShardScope, active, check_location, current_options, note_keying,
                         resolve_location, shard_scope, unit_memo, using)
from .memo_store import MemoStore, entry_file
from .memo_units import (FLUSH_ENTRIES, Counts, GatherBudget, GatherDeclined, MemoAuditFailed, UnitMemo,
                         served_and_computed)
from .memo_use import dry_run_text, record_run, shard_use, used_by

__all__ = ["FLUSH_ENTRIES", "MISSING", "Counts", "GatherBudget", "GatherDeclined", "MemoAuditFailed", "MemoOptions",
           "MemoStore", "ShardScope", "UnitMemo", "active", "canonical", "check_location", "current_options",
           "dry_run_text", "entry_check", "entry_file", "entry_files", "note_keying", "prune", "record_run",
           "resolve_location", "served_and_computed", "shard_scope", "shard_use", "stats", "unit_memo", "used_by",
           "using", "without"]
