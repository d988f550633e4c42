"""A release config (release.yaml): which inputs, which stages with which parameters, which models,
which seed. Typed, so a bad config is refused with every error before anything runs.

Paths inside a config are relative to the config file. A model written `tiny:<backend>` is the tiny
untrained model of that backend, built offline with the config's seed (see models/tiny.py).
"""
from __future__ import annotations

import hashlib
import os
import yaml
from pydantic import Field, ValidationError, model_validator

from xmdata.data import DATA_DIR
from xmdata.runtime import storage
from xmdata.runtime.cluster_spec import ClusterOptions
from xmdata.runtime.params import Strict
from xmdata.runtime.storage_check import check_location
from xmdata.schemas import ContractError
from xmdata.tasks.stage_params import BUNDLED_LID, DEFAULT_SHARDS, LanguageIdParams, ScoringParams, Seed, \
    SelectImagesParams, ShardCount

from .benchmark_config import BenchmarksConfig
from .mmmeb_config import MmmebConfig
from .release_recipe import IMPORT_PATH_OPTIONS, IMPORTED, TINY_EMBEDDERS, ImportConfig, ModelChoice, apply_sample, \
    tiny_models
from .translation_params import TranslateParams, TranslateQaParams

# The fields of each section that name an input file (made absolute, checked, fingerprinted).
INPUT_FIELDS = {"language_id": ["input"], "image_selection": ["input", "languages"], "translation": ["input"],
                "qa_translation": ["input"], "scoring": ["input", "images"]}
PACKAGED = {"demo": os.path.join(DATA_DIR, "releases", "demo.yaml")}
TINY = "tiny:"
# Which tiny models each model field may name (models/tiny.py builds them); a translator's must be its backend's.
TINY_MODELS = {"translator.model": ("m2m100", "madlad"), "filters.qe_model": ("cometkiwi",),
               "scoring.clip_model": ("open_clip",)}


# Each stage's section is its params (one declaration: tasks/stage_params.py, flows/translation_params.py)
# plus the inputs it reads; the CLI's flags and the flows' forms come from the same params.
class LanguageIdConfig(LanguageIdParams):
    input: str = Field(description="captions: id, text [, language, image_id]")


class ImageSelectionConfig(SelectImagesParams):
    input: str = Field(description="images: id, latitude, longitude [, path, url, license]")


class TranslationConfig(TranslateParams):
    input: str
    only_source_language: bool = Field(True, description="translate only rows whose `language` is the source")


class QATranslationConfig(TranslateQaParams):
    input: str


class ScoringConfig(ScoringParams):
    input: str = Field(description="captions: id, text, image_id [, language]")
    images: str = Field(description="images table whose `path` column the captions' image_id points at")
    include_translations: bool = True


class ReleaseConfig(Strict):
    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
    version: str = "0.1.0"
    description: str = ""
    license: str = "cc-by-4.0"
    citation: str = Field("", description="BibTeX of the paper the release reproduces (in the card)")
    seed: Seed = 0
    shards: ShardCount = DEFAULT_SHARDS
    columns: dict[str, str] = Field(default_factory=dict, description="column mapping applied to every input "
                                    "before its contract check, as --map: {ImageID: id, Latitude: latitude}")
    imports: dict[str, ImportConfig] = Field(default_factory=dict, description="public datasets imported as "
                                             "part of the build; a stage reads one as import:<name>/<table>.parquet")
    language_id: LanguageIdConfig | None = None
    image_selection: ImageSelectionConfig | None = None
    translation: TranslationConfig | None = None
    qa_translation: QATranslationConfig | None = None
    scoring: ScoringConfig | None = None
    mmmeb: MmmebConfig | None = None
    benchmarks: BenchmarksConfig | None = None
    cluster: ClusterOptions | None = Field(None, description="where big stages run when no --dask-address: a "
                                           "distributed cluster class (SLURM, Kubernetes…) with kwargs and adapt")

    @model_validator(mode="after")
    def _known_tiny_models(self):
        """`tiny:<name>` must name a tiny model the field can use: refused here, not after a build."""
        named = [("scoring.clip_model", "scoring.clip_model", self.scoring and self.scoring.clip_model, None)]
        named.append(("benchmarks.clip_model", "scoring.clip_model", self.benchmarks and self.benchmarks.clip_model,
                      None))
        for section in ("translation", "qa_translation", "benchmarks"):
            if c := getattr(self, section):
                named.append((f"{section}.translator.model", "translator.model", c.translator.model,
                              c.translator.backend))
                named.append((f"{section}.filters.qe_model", "filters.qe_model", c.filters and c.filters.qe_model, None))
        for system in self.mmmeb.systems if self.mmmeb else []:
            named.append((f"mmmeb.systems.{system.name}.model", "mmmeb.model", system.model,
                          TINY_EMBEDDERS[system.backend][len(TINY):]))
        for where, kind, name, backend in named:
            if not (name and name.startswith(TINY)):
                continue
            allowed = (backend,) if backend else TINY_MODELS[kind]
            if name[len(TINY):] not in allowed:
                raise ValueError(f"{where}: {name!r} is not a tiny model it can use; use "
                                 + " or ".join(f"'{TINY}{a}'" for a in allowed))
        return self


def config_path(config: str) -> str:
    """A packaged config by name (demo) or a path to a release.yaml."""
    path = PACKAGED.get(config, config)
    if os.path.isdir(path):
        raise ContractError(f"release config {config!r}: is a folder; give the release.yaml file")
    if not os.path.isfile(path):
        raise ContractError(f"release config {config!r}: no such file (packaged: {', '.join(PACKAGED)})")
    return os.path.abspath(path)


def load_release_config(config: str, sample: bool = False,
                        models: ModelChoice = "config") -> tuple[ReleaseConfig, str, str]:
    """(validated config with paths made absolute, the file's text, its sha256). SAMPLE merges the
    config's `sample:` section over it; MODELS tiny swaps in the tiny models (release_recipe.py)."""
    path = config_path(config)
    try:
        text = open(path, encoding="utf-8").read()
        raw = yaml.safe_load(text) or {}
        data = apply_sample(raw, sample)
        parsed = ReleaseConfig.model_validate(tiny_models(data) if models == "tiny" else data)
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError, AttributeError) as exc:
        raise ContractError(f"release config {path}: {_one_paragraph(exc)}") from exc
    resolved = _absolute_inputs(parsed, os.path.dirname(path))
    return resolved, text, hashlib.sha256(text.encode()).hexdigest()


def _input_exists(path: str, what: str) -> bool:
    if not storage.is_url(path):
        return os.path.exists(path)
    check_location(path, f"release config: {what}", must_exist=True)  # a store's own error, one line
    return True


def with_overrides(config: ReleaseConfig, overrides: dict) -> ReleaseConfig:
    """The config with --shards / --seed (or the UI's form) applied, validated like the file itself."""
    try:
        return ReleaseConfig.model_validate({**config.model_dump(), **overrides})
    except ValidationError as exc:
        raise ContractError(f"release overrides {overrides}: {_one_paragraph(exc)}") from exc


def _one_paragraph(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg'].removeprefix('Value error, ')}"
                         for e in exc.errors())
    return " ".join(str(exc).split())


def _absolute_inputs(config: ReleaseConfig, base: str) -> ReleaseConfig:
    def absolute(p: str | None) -> str | None:
        if p is None or p == BUNDLED_LID or p.startswith((TINY, IMPORTED)) or "://" in p:
            return p
        return os.path.normpath(os.path.join(base, os.path.expanduser(p)))

    data = config.model_dump()
    for entry in data["imports"].values():
        entry["source"] = absolute(entry["source"])
        entry["options"].update({k: absolute(entry["options"][k]) for k in IMPORT_PATH_OPTIONS})
    for entry in (data.get("benchmarks") or {}).get("sets", {}).values():
        entry["images"] = absolute(entry["images"])
    for section, keys in {**INPUT_FIELDS, "language_id": ["input", "lid_model"]}.items():
        for key in keys:
            if data.get(section):
                data[section][key] = absolute(data[section][key])
    missing = [f"{s}.{k}: {data[s][k]}" for s, keys in INPUT_FIELDS.items()
               for k in keys if data.get(s) and data[s][k] and not data[s][k].startswith(IMPORTED)
               and not _input_exists(data[s][k], f"{s}.{k}")]
    # An importer reads a local download (folders, archives): a URL source is refused here.
    missing += [f"imports.{name}.source: {entry['source']}" + (" (imports read a local download)"
                                                                if storage.is_url(entry["source"]) else "")
                for name, entry in data["imports"].items() if not os.path.exists(entry["source"])]
    missing += [f"imports.{name}.options.{k}: {entry['options'][k]}" for name, entry in data["imports"].items()
                for k in IMPORT_PATH_OPTIONS if entry["options"][k] and not os.path.exists(entry["options"][k])]
    missing += [f"{s}.{k}: {data[s][k]} (no import {data[s][k][len(IMPORTED):].split('/')[0]!r})"
                for s, keys in INPUT_FIELDS.items() for k in keys if data.get(s) and (data[s][k] or "").startswith(IMPORTED)
                and data[s][k][len(IMPORTED):].split("/")[0] not in data["imports"]]
    if data.get("benchmarks"):
        missing += [f"benchmarks.sets.{n}.images: {e['images']}" for n, e in data["benchmarks"]["sets"].items()
                    if not os.path.isdir(e["images"])]
        missing += [f"benchmarks.sets.{n}.source: {e['source']} (not an import)"
                    for n, e in data["benchmarks"]["sets"].items() if e["source"] not in data["imports"]]
    if data.get("mmmeb"):
        missing += [f"mmmeb.sources.{role}: {name} (not an import)" for role, names in data["mmmeb"]["sources"].items()
                    for name in names if name not in data["imports"]]
    if missing:
        raise ContractError("release config: input not found: " + "; ".join(missing))
    return ReleaseConfig.model_validate(data)
