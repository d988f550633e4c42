"""A table contract: a pyarrow schema, which of its columns are required, and which is the row id."""
from __future__ import annotations

from dataclasses import dataclass, field

import pyarrow as pa


@dataclass(frozen=True)
class Violation:
    """One broken rule of a contract: where it broke, and the first offending rows."""

    source: str
    column: str
    problem: str
    row_ids: tuple[str, ...] = ()

    def __str__(self) -> str:
        rows = f" (first offending rows: {', '.join(self.row_ids)})" if self.row_ids else ""
        return f"{self.source}: column {self.column!r}: {self.problem}{rows}"


class ContractError(ValueError):
    """A whole input breaks its contract; raised before anything is written. CLI exit code 2."""

    def __init__(self, violations: list[Violation] | str):
        self.violations = [violations] if isinstance(violations, str) else list(violations)
        super().__init__("\n".join(str(v) for v in self.violations))


@dataclass(frozen=True)
class TableContract:
    name: str
    schema: pa.Schema
    required: frozenset[str] = field(default_factory=frozenset)
    id_column: str = "id"
    description: str = ""
    # Columns that must hold text already: a number there (JSON, Parquet) is a wrong column, not a text.
    text_columns: frozenset[str] = field(default_factory=frozenset)

    @property
    def optional(self) -> list[str]:
        return [f.name for f in self.schema if f.name not in self.required]
