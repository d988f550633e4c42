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
from dataclasses import dataclass

from xmdata.runtime.cache_records import drop_cache_record, read_cache_record, write_cache_record

from .base import ModelSpec
from .pil_steps import PilRecipe, recipe_from_data, recipe_to_data

RECORD_VERSION = 1
RECORD_FOLDER = "loader-facts"


@dataclass(frozen=True)
class LoaderFacts:
    recipe: PilRecipe
    batch_size: int


def facts_key(kind: str, spec: ModelSpec) -> str:
    text = json.dumps({"v": RECORD_VERSION, "kind": kind, "spec": spec.to_dict()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()


def recorded_facts(kind: str, spec: ModelSpec) -> LoaderFacts | None:
    """The record for this model, or None: none yet, or not one this code wrote (a record that reads
    but is wrong in another way is caught when it starts a loader: early_loader.py)."""
    key = facts_key(kind, spec)
    data = read_cache_record(RECORD_FOLDER, key)
    try:
        if data["key"] != key or not isinstance(data["batch_size"], int):
            return None
        return LoaderFacts(recipe_from_data(data["recipe"]), data["batch_size"])
    except (ValueError, KeyError, TypeError):
        return None


def record_facts(kind: str, spec: ModelSpec, facts: LoaderFacts) -> bool:
    """Record them for the next process; False when the recipe cannot be recorded (an `Opaque` step)
    or the cache cannot be written (the run goes on: the record only saves time)."""
    key = facts_key(kind, spec)
    recipe = recipe_to_data(facts.recipe)
    if recipe is None:  # and a record of what the model was before goes: it would start a wrong loader each time
        drop_cache_record(RECORD_FOLDER, key)
        return False
    try:
        write_cache_record(RECORD_FOLDER, key, {"key": key, "kind": kind, "model": spec.name_or_path,
                                                "recipe": recipe, "batch_size": facts.batch_size})
    except OSError:
        return False
    return True
