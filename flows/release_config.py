"""A release config (release.yaml): which inputs, which stages with which parameters, which models,
which seed; for a paper recipe also the public datasets it imports (`imports:`) and the small sample
it builds on offline (`sample:`). Typed, so a bad config is refused with every error before anything runs.

Paths inside a config are relative to the config file. A model written `tiny:<backend>` is the tiny
untrained model of that backend, built offline with the config's seed (models/tiny.py); `--models tiny`
swaps one in for every model the config names (flows/release_refs.py lists them). `load_release_config`
reads a config once: `sample:` merged and --shards/--seed applied before its one validation, then
paths made absolute and tiny models swapped in on copies (`Release`).
"""
from __future__ import annotations

import os
from typing import NamedTuple

from pydantic import Field, ValidationError, model_validator

from xmdata.data import DATA_DIR
from xmdata.runtime.cluster_spec import ClusterOptions
from xmdata.tasks.release.choices import ModelChoice
from xmdata.tasks.release.image_options import EmbeddedImagesConfig
from xmdata.tasks.release.sections import ContaminationConfig, DedupConfig, ImageDownloadConfig, ImageSelectionConfig, ImportConfig, \
    LanguageIdConfig, QATranslationConfig, ScoringConfig, TranslationConfig
from xmdata.tasks.stage_params import DEFAULT_SHARDS, Seed, ShardCount

from .benchmark_config import RATED, SET_TABLES, BenchmarksConfig
from .mmmeb_config import MmmebConfig
from .release_refs import DOWNLOAD_TABLES, DOWNLOADED, IMPORTED, INPUT_FIELDS, TINY, absolute_paths, model_refs, \
    with_tiny_models


class ReleaseConfig(EmbeddedImagesConfig):  # embed_images, image_max_side: declared there, for the flags too
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
    image_download: ImageDownloadConfig | None = Field(None, description="download-images into WORK/image_download/"
                                                       ": every row with its status (as of the build)")
    dedup: DedupConfig | None = Field(None, description="near-duplicate images and captions among the inputs, "
                                      "removed before selection, translation and scoring")
    contamination: ContaminationConfig | None = Field(None, description="input images and captions that match a "
                                                      "reference (training data), removed before the other stages")
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
        for ref in model_refs(self):
            if ref.tiny and ref.name and ref.name.startswith(TINY) and ref.name[len(TINY):] not in ref.tiny:
                raise ValueError(f"{ref.field_name}: {ref.name!r} is not a tiny model it can use; use "
                                 + " or ".join(f"'{TINY}{a}'" for a in ref.tiny))
        return self

    @model_validator(mode="after")
    def _imports_exist(self):
        """Every `import:<name>/…` input, benchmark set and MMMEB source names an import of `imports:`;
        an `image_download:<table>` input names a table of the config's own image_download."""
        wrong = [f"{where}: {value} (no import {value[len(IMPORTED):].split('/')[0]!r})"
                 for where, value in self.inputs() if value.startswith(IMPORTED)
                 and value[len(IMPORTED):].split("/")[0] not in self.imports]
        wrong += [f"{where}: {value} ({why})" for where, value in self.inputs() if value.startswith(DOWNLOADED)
                  and (why := self._download_problem(where, value[len(DOWNLOADED):]))]
        if self.benchmarks:
            wrong += [f"benchmarks.sets.{n}.source: {e.source} (not an import)"
                      for n, e in self.benchmarks.sets.items() if e.source not in self.imports]
            wrong += [f"benchmarks.sets.{n}.source: {e.source} (a {fmt} import has no pairs a set can score; "
                      f"formats that do: {', '.join(sorted(SET_TABLES))})" for n, e in self.benchmarks.sets.items()
                      if e.source in self.imports and (fmt := self.imports[e.source].format) not in SET_TABLES]
            rated = {n: e.images for n, e in self.benchmarks.sets.items()
                     if e.source in self.imports and SET_TABLES.get(self.imports[e.source].format) == RATED}
            if len(set(rated.values())) > 1:  # one table, one folder its image paths are relative to
                wrong += [f"benchmarks.sets: the rated sets {', '.join(sorted(rated))} name different images "
                          f"folders ({', '.join(sorted(set(rated.values())))}); their pairs are one table, "
                          f"rated_pairs, whose image paths are relative to one folder"]
        if self.mmmeb:
            wrong += [f"mmmeb.sources.{role}: {name} (not an import)"
                      for role, names in self.mmmeb.sources.model_dump().items() for name in names
                      if name not in self.imports]
        if wrong:
            raise ValueError("input not found: " + "; ".join(wrong))
        return self

    def _download_problem(self, where: str, table: str) -> str | None:
        if table not in DOWNLOAD_TABLES:
            return f"the download writes {' and '.join(DOWNLOAD_TABLES)}"
        if where == "image_download.input":
            return "the download's own input cannot be its output"
        if not self.image_download:
            return "no image_download section downloads it"
        if where in ("scoring.images", "image_selection.input") and table != "images.parquet":
            return "an images table is image_download:images.parquet (the ok rows, with path and coordinates)"
        if where in ("scoring.images", "image_selection.input") and self.image_download.format != "files":
            return f"image_download.format is {self.image_download.format}: only `files` gives each image a path"
        if where == "image_selection.languages":
            return "a language-area file is not a download's table"
        return None

    def inputs(self) -> list[tuple[str, str]]:
        """(section.field, path) of every input file a stage section names (INPUT_FIELDS), as set."""
        return [(f"{section}.{key}", value) for section, keys in INPUT_FIELDS.items() if getattr(self, section)
                for key in keys if (value := getattr(getattr(self, section), key))]


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


PACKAGED = {"demo": os.path.join(DATA_DIR, "releases", "demo.yaml")}


class Release(NamedTuple):
    """A release config read once: the config a build runs (--sample merged, --shards/--seed applied,
    paths absolute, --models tiny swapped in), the file it came from, and how it was asked for."""
    config: ReleaseConfig
    path: str
    text: str
    sha256: str
    as_written: ReleaseConfig  # the same before --models tiny: the models the recipe names (the card)
    overrides: dict  # --shards, --seed, --sample, --models as the manifest records them
    resolved: ReleaseConfig | None = None  # the preflight's: tiny models as their local folders


def config_path(config: str) -> str:
    """A packaged config by name (demo) or a path to a release.yaml."""
    from xmdata.schemas import ContractError

    path = PACKAGED.get(config, config)
    if os.path.isdir(path):
        raise ContractError(f"release config {config!r}: is a folder; give the release.yaml file")
    if not os.path.isfile(path):
        raise ContractError(f"release config {config!r}: no such file (packaged: {', '.join(PACKAGED)})")
    return os.path.abspath(path)


def load_release_config(config: str, sample: bool = False, models: ModelChoice = "config",
                        shards: int | None = None, seed: int | None = None, images: dict | None = None) -> Release:
    """CONFIG (a path or a packaged name) read and validated once; ContractError in one line. IMAGES:
    --embed-images/--image-max-side as given (ImageEmbedding.given), over the config's own keys."""
    import hashlib

    import yaml

    from xmdata.schemas import ContractError

    path = config_path(config)
    given = {k: v for k, v in {"shards": shards, "seed": seed}.items() if v is not None} | (images or {})
    try:
        text = open(path, encoding="utf-8").read()
        raw = yaml.safe_load(text) or {}
        if not isinstance(raw, dict):
            raise ContractError(f"release config {path}: a release config is a YAML mapping of sections (name:, "
                                f"language_id:, translation:, …), not a {type(raw).__name__}")
        as_written = ReleaseConfig.model_validate({**apply_sample(raw, sample), **given})
    except (OSError, UnicodeDecodeError, yaml.YAMLError, ValidationError, AttributeError) as exc:
        raise ContractError(f"release config {path}: {_one_paragraph(exc)}") from exc
    as_written = absolute_paths(as_written, os.path.dirname(path))
    overrides = given | ({"sample": True} if sample else {}) | ({"models": models} if models != "config" else {})
    return Release(with_tiny_models(as_written) if models == "tiny" else as_written, path, text,
                   hashlib.sha256(text.encode()).hexdigest(), as_written, overrides)


def _one_paragraph(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        return "; ".join(f"{'.'.join(map(str, e['loc'])) or 'config'}: {e['msg'].removeprefix('Value error, ')}"
                         for e in exc.errors())
    return " ".join(str(exc).split())
