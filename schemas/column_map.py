"""Column mapping: `--map ImageID=id,Latitude=latitude` (or `columns:` in a release config) renames the
columns of every input a command reads, before any contract check, so a table with other names needs
no script. One mapping per run, held in a context variable: the flow and its Prefect task threads
(which copy the context) see it, and a nested block adds to it for its own extent."""
from __future__ import annotations

import contextvars
from contextlib import contextmanager
from dataclasses import dataclass, field

import pyarrow as pa

from .contract import ContractError, Violation

@dataclass(frozen=True)
class ColumnMap:
    """The mapping in force, and the source names some input read under it actually had (one set,
    shared with the enclosing blocks)."""

    mapping: dict[str, str]
    used: set[str] = field(default_factory=set)

    def unused(self) -> list[str]:
        """Source names no input had: most likely a typo, so the CLI warns about them."""
        return sorted(set(self.mapping) - self.used)


_active: contextvars.ContextVar[ColumnMap | None] = contextvars.ContextVar("xmdata_column_map", default=None)


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
    active = _active.get()
    return dict(active.mapping) if active else {}


@contextmanager
def column_mapping(mapping: dict[str, str] | str | None):
    """Apply `mapping` to every input read inside the block; yields the ColumnMap. A nested block
    adds to the outer mapping (its own entries win): `xmdata release --map …` and the config's
    `columns:` both apply."""
    mapping = parse_column_map(mapping) if isinstance(mapping, str) or mapping is None else dict(mapping)
    outer = _active.get()
    active = ColumnMap({**active_column_map(), **mapping}, outer.used if outer else set())
    token = _active.set(active)
    try:
        yield active
    finally:
        _active.reset(token)


def rename_columns(table: pa.Table, mapping: dict[str, str], source: str) -> pa.Table:
    """The table with mapped names. Refuses a rename onto a column the table already has (which of
    the two would the stage read?)."""
    present = {old: new for old, new in mapping.items() if old in table.column_names and old != new}
    if not present:
        return table
    if (active := _active.get()) is not None:
        active.used.update(present)
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
