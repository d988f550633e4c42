"""`xmdata memo stats|prune`: what the memo of model work holds, and making it smaller (runtime/memo.py)."""
from __future__ import annotations

import argparse
import json

from xmdata.cli_command import Command


def non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0:  # NaN too
        raise argparse.ArgumentTypeError(f"must be a number >= 0, got {text}")
    return value


def add_common(command: argparse.ArgumentParser) -> None:
    command.add_argument("--memo", default=None, metavar="FOLDER|URL",
                         help="the memo (default: XMDATA_MEMO, else XMDATA_CACHE/memo)")
    command.add_argument("--json", action="store_true", help="as JSON, for scripts")


def add_prune_arguments(prune: argparse.ArgumentParser) -> None:
    add_common(prune)
    prune.add_argument("--older-than", type=non_negative, default=None, metavar="DAYS",
                       help="entries neither written nor served for this many days")
    prune.add_argument("--max-size", type=non_negative, default=None, metavar="GB",
                       help="then the least recently used until the memo holds at most this much")
    prune.add_argument("--all", action="store_true", help="every entry")
    prune.add_argument("--keep-used-by", nargs="+", default=None, metavar="OUT",
                       help="every entry that the builds of these output or release folders did not use "
                            "(their shards' _memo/ files say which they took or computed)")
    prune.add_argument("--dry-run", action="store_true",
                       help="say what would go, per kind of unit (entry files, entries, bytes); remove nothing")


def memo(args: argparse.Namespace) -> int:
    from xmdata.runtime import memo as memos
    from xmdata.schemas import ContractError

    location = memos.resolve_location(args.memo)
    if location is None:
        raise ContractError("xmdata memo: the memo is off (XMDATA_MEMO=off); name one with --memo FOLDER")
    memos.check_location(location)
    if args.memo_command == "stats":
        found = memos.stats(location)
        print(json.dumps(found, indent=2, ensure_ascii=False) if args.json else stats_text(found))
        return 0
    if args.older_than is None and args.max_size is None and not args.all and args.keep_used_by is None:
        raise ContractError("xmdata memo prune: say what to remove: --older-than DAYS, --max-size GB, "
                            "--keep-used-by OUT… or --all")
    keep = memos.used_by(args.keep_used_by) if args.keep_used_by is not None else None  # refused before removing
    done = memos.prune(location, args.older_than, None if args.max_size is None else int(args.max_size * 1e9),
                       args.all, keep=keep, dry_run=args.dry_run)
    if args.dry_run:
        print(json.dumps(done) if args.json else dry_run_text(location, done))
        return 0
    unused = f" ({done['removed_entries']:,} entries no kept output used)" if keep is not None else ""
    print(json.dumps(done) if args.json else
          f"{location}: removed {done['removed_files']} entry file(s), {size(done['removed_bytes'])}{unused}; "
          f"{done['kept_files']} left, {size(done['kept_bytes'])}")
    return 0


def dry_run_text(location: str, done: dict) -> str:
    """What `prune --dry-run` found would go: per kind of unit, then the memo before and after."""
    lines = [f"dry run: nothing removed; memo {location}"]
    if done["going"]:
        lines.append(f"{'kind':<18}{'files':>7}{'entries':>12}{'size':>11}")
        lines += [f"{kind:<18}{row['files']:>7,}{row['entries']:>12,}{size(row['bytes']):>11}"
                  for kind, row in done["going"].items()]
    going = {k: sum(row[k] for row in done["going"].values()) for k in ("entries", "bytes")}
    lines.append(f"would go: {going['entries']:,} entries, {size(going['bytes'])}; "
                 f"{done['kept_files']} entry file(s) left, {size(done['kept_bytes'])}")
    return "\n".join(lines)


def size(n: int) -> str:
    for unit in ("B", "kB", "MB", "GB"):
        if n < 1000 or unit == "GB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1000
    return f"{n} B"


def stats_text(found: dict) -> str:
    lines = [f"memo {found['location']}"]
    if not found["kinds"]:
        lines.append("empty")
    else:
        lines.append(f"{'kind':<18}{'contexts':>9}{'entries':>12}{'size':>11}")
        for kind, row in found["kinds"].items():
            bad = f"  ({row['unreadable']} unreadable file(s))" if row.get("unreadable") else ""
            lines.append(f"{kind:<18}{row['contexts']:>9}{row['entries']:>12,}{size(row['bytes']):>11}{bad}")
    if found["recent_runs"]:
        lines.append("recent builds (newest first):")
    for run in found["recent_runs"]:
        from xmdata.runtime.stage_tracking import memo_line

        used = "; ".join(f"{stage}{memo_line(units)[1:].replace(' memo:', '')}" for stage, units in run["stages"].items())
        lines.append(f"  {run['finished']}  {run['command']} -> {run['out']}: {used}")
    return "\n".join(lines)


GUIDE = "how-to/incremental.md"
MEMO = Command("memo", "the memo of model results per unit that builds reuse: its size, recent hits, and pruning",
               run=memo, guide=GUIDE, subcommand_dest="memo_command", subcommands=(
                   Command("stats", "entries and bytes per kind of unit, and what recent builds took from it",
                           add_arguments=add_common, guide=GUIDE),
                   Command("prune", "remove entries (a pruned entry is computed again when a build needs it)",
                           add_arguments=add_prune_arguments, guide=GUIDE)))
