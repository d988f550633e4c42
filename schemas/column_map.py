"""Column mapping: `--map ImageID=id,Latitude=latitude` (or `columns:` in a release config) renames the
columns of every input a command reads, before any contract check, so a table with other names needs
no script. One mapping per run, held in XMDATA_COLUMN_MAP so that every thread of the run sees it."""
from __future__ import annotations

import json
import os
from contextlib import contextmanager

import pyarrow as pa

from .contract import ContractError, Violation

COLUMN_MAP_ENV = "XMDATA_COLUMN_MAP"
_used: set[str] = set()  # source names some input of this process actually had


def parse_column_map(text: str | None) -> dict[str, str]:
    """'A=a,B=b' -> {'A': 'a', 'B': 'b'}; ContractError on a malformed or ambiguous pair."""
    mapping: dict[str, str] = {}
    for pair in (p.strip() for p in (text or "").split(",")):
        if not pair:
            continue
        old, sep, new = (s.strip() for s in pair.partition("="))
        if not sep or not old or not new:
            raise ContractError(f"--map {text!r}: {pair!r} is not SOURCE_COLUMN=NEW_NAME")
        if old in mapping and mapping[old] != new:
            raise ContractError(f"--map {text!r}: {old!r} is mapped twice")
        mapping[old] = new
    return mapping


def active_column_map() -> dict[str, str]:
    return json.loads(os.environ.get(COLUMN_MAP_ENV) or "{}")


@contextmanager
def column_mapping(mapping: dict[str, str] | str | None):
    """Apply `mapping` to every input read inside the block. A nested block adds to the outer mapping
    (its own entries win): `xmdata release --map …` and the config's `columns:` both apply."""
    mapping = parse_column_map(mapping) if isinstance(mapping, str) or mapping is None else dict(mapping)
    mapping = {**active_column_map(), **mapping}
    before = os.environ.get(COLUMN_MAP_ENV)
    os.environ[COLUMN_MAP_ENV] = json.dumps(mapping, sort_keys=True)
    try:
        yield mapping
    finally:
        if before is None:
            os.environ.pop(COLUMN_MAP_ENV, None)
        else:
            os.environ[COLUMN_MAP_ENV] = before


def unused_keys(mapping: dict[str, str]) -> list[str]:
    """Source names no input of this process had: most likely a typo, so the CLI warns about them."""
    return sorted(set(mapping) - _used)


def rename_columns(table: pa.Table, mapping: dict[str, str], source: str) -> pa.Table:
    """The table with mapped names. Refuses a rename onto a column the table already has (which of
    the two would the stage read?)."""
    present = {old: new for old, new in mapping.items() if old in table.column_names and old != new}
    if not present:
        return table
    _used.update(present)
    clashes = [Violation(source, new, f"--map {old}={new}: the table already has a column {new!r}")
               for old, new in present.items() if new in table.column_names and new not in present]
    targets = list(present.values())
    clashes += [Violation(source, new, "--map gives two columns this name")
                for new in sorted({t for t in targets if targets.count(t) > 1})]
    if clashes:
        raise ContractError(clashes)
    return table.rename_columns([present.get(c, c) for c in table.column_names])


def apply_active_map(table: pa.Table, source: str) -> pa.Table:
    return rename_columns(table, active_column_map(), source)
