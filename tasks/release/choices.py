"""What a release build may be asked for beside its config, light enough for the CLI's --help: the
models it runs (`--models`: the config's, or the offline tiny ones swapped in for every one)."""
from __future__ import annotations

from typing import Literal

MODEL_CHOICES = ("config", "tiny")
ModelChoice = Literal[MODEL_CHOICES]
