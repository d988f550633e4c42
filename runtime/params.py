"""The base of every params model: a stage's options (tasks/stage_params.py), a release config's
sections and what its shards run with (e.g. LanguageIdShard). Its model_dump() is what a completion
record's params hash covers."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class Strict(BaseModel):
    """A misspelt key is an error (extra=forbid), and no float field takes NaN or ±inf (a NaN weight or
    threshold would publish NaN scores, or compare false with every row): a config, the form, a flag
    and a Python caller are refused alike."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)


class Params(Strict):
    """...and a built instance cannot change under a stage (frozen)."""

    model_config = ConfigDict(frozen=True)
