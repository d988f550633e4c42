"""What turns a release config into a paper recipe: the public datasets it imports as part of the
build (`imports:`), the small sample inputs it builds on instead (`sample:`, with `--sample`), and the
tiny models swapped in for the paper's (`--models tiny`).

A stage reads an imported table as `import:<name>/<table>.parquet`; the build resolves it to the
import's output in its work folder. `sample:` is deep-merged over the config, so a recipe declares its
real sources and parameters once and says only what differs for the offline build (sample sources,
fewer beams); the manifest records `sample` and `models` among the overrides.
"""
from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from xmdata.tasks.importers.formats import FORMATS
from xmdata.tasks.importers.options import ImportOptions

IMPORTED = "import:"
MODEL_CHOICES = ("config", "tiny")
ModelChoice = Literal[MODEL_CHOICES]
TINY_EMBEDDERS = {"open_clip": "tiny:open_clip", "hf": "tiny:hf_clip"}
# Fields of ImportOptions that name files: made absolute, relative to the config, like every input.
IMPORT_PATH_OPTIONS = ("coordinates", "images", "captions", "english_names")


class ImportConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = Field(description="an `xmdata import` format")
    source: str = Field(description="the download, in its published layout (relative to the config)")
    options: ImportOptions = ImportOptions()

    @field_validator("format")
    @classmethod
    def _known(cls, value: str) -> str:
        if value not in FORMATS:
            raise ValueError(f"unknown import format {value!r}; known: {', '.join(FORMATS)}")
        return value


def deep_merge(base: dict, over: dict) -> dict:
    """BASE with OVER's keys replacing, dictionaries merged key by key (lists and values replaced); a key
    OVER sets to null is removed (a sample build leaving out a set it has no sample of)."""
    merged = dict(base)
    for key, value in over.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = deep_merge(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
                else value
    return merged


def apply_sample(raw: dict, sample: bool) -> dict:
    """The config as written, or with its `sample:` section merged over it; `sample:` itself removed."""
    over = raw.get("sample") or {}
    body = {k: v for k, v in raw.items() if k != "sample"}
    return deep_merge(body, over) if sample else body


def tiny_models(data: dict) -> dict:
    """Every model of a config (as a dict) replaced by the tiny model of its backend; lid.176 stays,
    it is real and small. Declared here once for every section that names a model."""
    for section in ("translation", "qa_translation", "benchmarks"):
        if data.get(section):
            translator = data[section].setdefault("translator", {}) or {}
            backend = translator.get("backend") or ("madlad" if section == "qa_translation" else "m2m100")
            translator.update(model=f"tiny:{backend}", revision=None, device="cpu", dtype="float32")
            data[section]["translator"] = translator
            if data[section].get("filters") or section != "qa_translation":
                filters = data[section].setdefault("filters", {}) or {}
                filters.update(qe_model="tiny:cometkiwi", qe_revision=None, qe_device="cpu", qe_precision="float32")
                data[section]["filters"] = filters
    for section in ("scoring", "benchmarks"):
        if data.get(section):
            data[section].update(clip_model="tiny:open_clip", pretrained=None)
    if data.get("mmmeb"):
        data["mmmeb"]["systems"] = [{**system, "model": TINY_EMBEDDERS[system.get("backend", "open_clip")],
                                     "pretrained": None, "revision": None, "device": "cpu"}
                                    for system in data["mmmeb"].get("systems", [])]
    return data
