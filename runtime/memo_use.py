"""What builds took from the memo and gave it (runtime/memo.py): a shard's use file beside its record
(`<stage>/_memo/<shard>.json`, what `explain ROW` and `memo prune --keep-used-by` read), a build's
run file beside the memo (`MEMO/runs/`, what `memo stats` shows), and a dry run's table of what a
build would compute. Never in a completion record or a release's hashes."""
from __future__ import annotations

import json
import os
from typing import Sequence

from . import storage
from .memo_keys import RUNS
from .memo_scope import MemoOptions, ShardScope
from .memo_store import make_private_folder

ANY_CONTEXT = "*"
USE_FOLDER = "_memo"  # `<stage>/_memo/<shard>.json` in an output: what each shard took and gave
RECENT_RUNS = 10


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
        options.store.mark_not_writable(f"{type(exc).__name__}: {exc}")


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
