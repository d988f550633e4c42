"""The folder `xmdata explain` reads: a release (data/, rejects/, manifest.json) with or without its
build folder, or a work folder (a release's build, or a command's --out: one folder per stage with
data/, rejects/ and _done/ records). Nothing is copied: each lookup scans the stage's own files."""
from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import dataclass, field

from xmdata.runtime import storage
from xmdata.schemas import ContractError
from xmdata.tasks.release.manifest import read_manifest as release_manifest
from xmdata.tasks.translation.pool import ENGINES_FOLDER

# logical table: (file or shard glob in a work folder, file in a release)
TABLES = {
    "captions": ("captions/data/*.parquet", None),
    "language_id": ("language_id/data/*.parquet", "data/captions.parquet"),
    "texts": ("texts/data/*.parquet", None),
    "candidates": ("candidates.parquet", "data/translation_candidates.parquet"),
    "translations": ("translations.parquet", "data/translations.parquet"),
    "images": ("images/data/*.parquet", None),
    "geocode": ("geocode/data/*.parquet", None),
    "selection": ("selection.parquet", "data/images.parquet"),
    "selection_optimal": ("selection_optimal.parquet", "data/images_optimal.parquet"),
    "pairs": ("pairs/data/*.parquet", None),
    "clip_score": ("clip_score/data/*.parquet", "data/clip_scores.parquet"),
    "qa_instances": ("qa_instances/data/*.parquet", None),
    "qa_candidates": ("qa_candidates.parquet", None),
    "mbr_decisions": ("mbr_decisions.parquet", None),  # an MBR selection's winners and runners-up
    "qa_parallel": ("qa_parallel.parquet", "data/qa_parallel.parquet"),
    "clean_matches": ("clean/matches.parquet", "data/clean_matches.parquet"),  # a release's dedup:/contamination:
    "matches": ("matches.parquet", None),  # xmdata dedup / contamination --out
}
# rejects a work folder keeps outside a stage folder, by their release name
REJECTS_FILES = {"translation_selection": "translation_rejects.parquet", "qa_extraction": "qa_rejects.parquet"}


@dataclass
class Folders:
    """Where each table of one build is: `work` (None when the build folder is gone) and `release`."""

    work: str | None
    release: str | None
    manifest: dict | None = None
    searched: list[str] = field(default_factory=list)  # what an unknown id was looked for in

    def table_paths(self, name: str) -> list[str]:
        in_work, in_release = TABLES[name]
        paths = sorted(glob.glob(os.path.join(glob.escape(self.work), in_work))) if self.work else []
        if not paths and self.release and in_release and os.path.exists(os.path.join(self.release, in_release)):
            paths = [os.path.join(self.release, in_release)]
        if paths:
            self.searched.append(name)
        return paths

    def rejects_paths(self, stage: str) -> list[str]:
        paths = []
        if self.work:
            inside = REJECTS_FILES.get(stage, os.path.join(stage, "rejects", "*.parquet"))
            paths = sorted(glob.glob(os.path.join(glob.escape(self.work), inside)))
            if not paths and stage not in REJECTS_FILES:  # a pool's engines: engines/<name>/<stage>/rejects/
                paths = sorted(glob.glob(os.path.join(glob.escape(self.work), ENGINES_FOLDER, "*", inside)))
        if not paths and self.release and os.path.exists(os.path.join(self.release, "rejects", f"{stage}.parquet")):
            paths = [os.path.join(self.release, "rejects", f"{stage}.parquet")]
        if paths:
            self.searched.append(f"rejects/{stage}")
        return paths

    def report(self, name: str) -> dict | None:
        """A build report (translation_report.json, …): the work folder's, else the release's copy."""
        for path in ([os.path.join(self.work, name)] if self.work else []) + (
                [os.path.join(self.release, "reports", name)] if self.release else []):
            if os.path.exists(path):
                return json.load(open(path, encoding="utf-8"))
        return None

    def work_json(self, name: str) -> dict | None:
        path = os.path.join(self.work, name) if self.work else None
        return json.load(open(path, encoding="utf-8")) if path and os.path.exists(path) else None


def is_work_folder(path: str) -> bool:
    return bool(glob.glob(os.path.join(glob.escape(path), "*", "_done"))) or any(
        os.path.exists(os.path.join(path, t[0])) for t in TABLES.values() if "*" not in t[0])


def open_folders(path: str, build: str | None = None) -> Folders:
    """A release (its build folder from --build, else the manifest's `work_folder`) or a work folder
    (and the release around it, when it is one's build); refused in one line otherwise."""
    if storage.is_url(path):
        raise ContractError(f"{path}: explain reads a local folder; copy the release here first "
                            f"(e.g. `aws s3 sync {path} ./release`)")
    path = os.path.abspath(path)
    if not os.path.isdir(path):
        raise ContractError(f"{path}: no such folder")
    if not os.path.exists(os.path.join(path, "manifest.json")):
        if not is_work_folder(path):
            raise ContractError(f"{path}: neither a release (no manifest.json) nor a work folder (no stage "
                                f"folder with completion records)")
        parent = os.path.dirname(path)
        manifest = read_manifest(parent) if os.path.exists(os.path.join(parent, "manifest.json")) else None
        if manifest and manifest.get("work_folder") == os.path.basename(path):
            check_same_build(parent, manifest, path)
            return Folders(path, parent, manifest)  # a release's own build: its config gives the params
        return Folders(path, None, None)
    manifest = read_manifest(path)
    work = build or (os.path.join(path, manifest["work_folder"]) if manifest.get("work_folder") else None)
    if work and not os.path.isdir(work):
        if build:
            raise ContractError(f"--build {build}: no such folder")
        work = None
    if work:
        check_same_build(path, manifest, work)
    return Folders(work, path, manifest)


def read_manifest(release: str) -> dict:
    return release_manifest(release)["release"]


def check_same_build(release: str, manifest: dict, work: str) -> None:
    """A release publishes its build's summary.json byte for byte (reports/summary.json, hashed in the
    manifest): a work folder whose summary differs holds another build's records."""
    expected = manifest.get("files", {}).get("reports/summary.json", {}).get("sha256")
    summary = os.path.join(work, "summary.json")
    if not os.path.exists(summary):
        raise ContractError(f"{work}: no summary.json: not a finished build, so not the build of {release}")
    found = hashlib.sha256(open(summary, "rb").read()).hexdigest()
    if expected and found != expected:
        raise ContractError(f"{work}: its records belong to another build (summary.json differs from the one "
                            f"{release}/manifest.json lists); pass the release's own build folder with --build, "
                            f"or none to explain from the published tables")
