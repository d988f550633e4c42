"""What a model's image loader needs before the model is loaded: its decode recipe and batch size.

A cold open_clip model costs 4-6 s before its first image (torch's and open_clip's imports, then the
model: docs/explanation/light-models.md), and the decoders cannot start without the model's recipe
(`decode_recipe`): a 400-photo shard spent as long waiting for its model as decoding. So the recipe and
the default batch size are recorded when a process first loads the model, in
XMDATA_CACHE/loader-facts/<key>.json (the key: a sha256 of the model kind and spec), and the next
process starts its decoders from the record while its model loads (tasks/build/early_loader.py).

A record is a guess, checked: once the model is loaded, its own recipe and batch size must equal the
record's, else what was decoded from the record is dropped, decoding starts again with the model's, and
the record is rewritten. So a stale record (a model folder whose weights or preprocess config were
replaced, another open_clip) costs time once, never a result. A recipe with a step of the model's own
(`Opaque`) is not recorded. The record is the owner's (0700 folder, 0600 file); a damaged one is ignored.
"""
from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

from xmdata.runtime import settings
from xmdata.runtime.owner_only import write_private

from .base import ModelSpec
from .pil_steps import PilRecipe, recipe_from_data, recipe_to_data

RECORD_VERSION = 1


@dataclass(frozen=True)
class LoaderFacts:
    recipe: PilRecipe
    batch_size: int


def facts_key(kind: str, spec: ModelSpec) -> str:
    text = json.dumps({"v": RECORD_VERSION, "kind": kind, "spec": spec.to_dict()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def _record_path(kind: str, spec: ModelSpec) -> str:
    return os.path.join(settings.CACHE.get(), "loader-facts", f"{facts_key(kind, spec)}.json")


def recorded_facts(kind: str, spec: ModelSpec) -> LoaderFacts | None:
    """The record for this model, or None: none yet, or not one this code wrote (a record that reads
    but is wrong in another way is caught when it starts a loader: early_loader.py)."""
    try:
        with open(_record_path(kind, spec), encoding="utf-8") as f:
            data = json.load(f)
        if data["key"] != facts_key(kind, spec) or not isinstance(data["batch_size"], int):
            return None
        return LoaderFacts(recipe_from_data(data["recipe"]), data["batch_size"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def record_facts(kind: str, spec: ModelSpec, facts: LoaderFacts) -> bool:
    """Record them for the next process; False when the recipe cannot be recorded (an `Opaque` step)
    or the cache cannot be written (the run goes on: the record only saves time)."""
    recipe = recipe_to_data(facts.recipe)
    if recipe is None:  # and a record of what the model was before goes: it would start a wrong loader each time
        try:
            os.unlink(_record_path(kind, spec))
        except OSError:
            pass
        return False
    record = {"key": facts_key(kind, spec), "kind": kind, "model": spec.name_or_path, "recipe": recipe,
              "batch_size": facts.batch_size}
    try:
        write_private(_record_path(kind, spec), json.dumps(record, indent=1) + "\n")
    except OSError:
        return False
    return True
