"""The typed trace `xmdata explain` returns: the input row, then one step per stage."""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Literal

Outcome = Literal["kept", "rejected", "absent"]


@dataclass
class Step:
    """One stage's outcome for the row: what it added (`values`), with the params and model it ran with.
    `record`: the shard's completion record (params hash, code version; in a pool, each engine's by
    its label); `candidates`: every
    translation candidate with its scores and verdict, for a selection step."""

    stage: str
    outcome: Outcome
    reason: str | None = None
    values: dict = field(default_factory=dict)
    params: dict | None = None
    model: dict | list | None = None
    record: dict | None = None
    candidates: list[dict] = field(default_factory=list)


@dataclass
class Trace:
    """A row of one kind (caption, image, pair, qa_instance) and its steps, in stage order."""

    kind: str
    id: str
    input: dict | None
    steps: list[Step] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)
