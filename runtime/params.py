"""The base of every params model: a stage's options (tasks/stage_params.py) and what its shards run
with (e.g. LanguageIdShard). Its model_dump() is what a completion record's params hash covers."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Params(BaseModel):
    """A misspelt key is an error (extra=forbid) and a built instance cannot change under a stage (frozen)."""

    model_config = ConfigDict(frozen=True, extra="forbid")
