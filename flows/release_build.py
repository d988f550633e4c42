"""The build behind a release: the stages its config names, into one work folder.

First the public datasets of `imports:`, converted in the build's process (`xmdata import`'s own code)
into WORK/imports/<name>/, and stages' `import:<name>/<file>` inputs pointed there; an import whose
source files, format and options are unchanged is not redone. Then each stage, the same code its own
command runs (download-images, identify-language, select-images, translate, translate-qa, score); a
release only chooses which run and with what. The stages that read only the config's inputs
(language ID, image selection, translation, QA translation) run side by side (runtime/side_by_side.py)
when a cluster may run their stages, and what they give is added in that order: the release is the
same whichever finishes first.
Finished shards are skipped, so a killed build resumes where it stopped.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Callable

import pyarrow as pa
import pyarrow.parquet as pq
from prefect.logging import get_logger

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_json_atomic
from xmdata.runtime.process import StageReport
from xmdata.runtime.session import current_session
from xmdata.runtime.side_by_side import side_by_side
from xmdata.schemas import CAPTIONS, IMAGES
from xmdata.schemas.readers import read_input
from xmdata.tasks.images.params import DownloadImagesParams
from xmdata.tasks.importers.run import import_dataset
from xmdata.tasks.release.image_roots import record_image_roots
from xmdata.tasks.release.manifest import model_fingerprint
from xmdata.tasks.release.sections import ImageDownloadConfig
from xmdata.tasks.scoring.input import pairs_from_captions

from .benchmarks import build_benchmarks
from .download_images import download_images
from .language_id import label_languages
from .finish import step_report
from .mmmeb import build_mmmeb
from .release_clean import clean_release_inputs
from .release_config import ReleaseConfig
from .release_preflight import translation_texts
from .release_refs import DOWNLOAD_FOLDER, DOWNLOADED, IMPORTED, replaced
from .score import score_pairs
from .select_images import select_geo_diverse
from .translate import publish_report, translate_texts
from .translate_qa import publish_qa_report, translate_qa_rows


RECORD = "_source.json"


@dataclass
class Build:
    reports: list[StageReport] = field(default_factory=list)
    distributions: dict = field(default_factory=dict)
    markdown: list[str] = field(default_factory=list)

    def add(self, reports: list[StageReport], distributions: dict, title: str = "", markdown: str = ""):
        self.reports += reports
        self.distributions.update(distributions)
        if markdown:
            self.markdown.append(f"\n### {title}\n\n{markdown}")


def build_release_data(config: ReleaseConfig, work: str) -> Build:
    """Run every configured stage into WORK; returns what the summary and the card need."""
    build, shards = Build(), config.shards
    import_reports, folders, roots = run_imports(config, work)
    build.add(import_reports, {})
    config = resolve_built(config, folders, work)
    if c := config.image_download:  # first: its images are there before any later stage runs
        build.add(*download_release_images(c, work, shards))
    if config.dedup or config.contamination:  # before any stage selects, translates or scores a row
        config, reports, stats, markdown = clean_release_inputs(config, work, shards)
        build.add(reports, stats, "Clean sets", markdown)
    parts = independent_parts(config, work, shards)
    together = current_session().may_use_a_cluster  # else in turns, as in this process they would be anyway
    for added in side_by_side(parts, get_logger("xmdata.release")) if together else [part() for part in parts]:
        build.add(*added)
    image_roots = {}
    if c := config.scoring:
        pairs, image_roots["clip_scores"] = scoring_pairs(config, work, folders, roots)
        build.add(*score_pairs(pairs, work, shards, image_roots["clip_scores"], c))
    if c := config.benchmarks:
        formats = {name: entry.format for name, entry in config.imports.items()}
        reports, stats, markdown, rated_roots = build_benchmarks(c, folders, formats, work, shards)
        build.add(reports, stats, "Benchmarks", markdown)
        image_roots.update(rated_roots)
    if not storage.is_url(work):  # a store's build: the images' local folders mean nothing there
        record_image_roots(work, {t: r for t, r in image_roots.items() if not storage.is_url(r)})
    if c := config.mmmeb:
        reports, stats, markdown = build_mmmeb(c, folders, roots, work, config.seed)
        build.add(reports, stats, "MMMEB", markdown)
    return build


def independent_parts(config: ReleaseConfig, work: str, shards: int) -> list[Callable[[], tuple]]:
    """The configured stages that read only the config's inputs, none another's output: each a
    function giving its `Build.add` arguments, run side by side (runtime/side_by_side.py) and added
    in this order. Scoring reads the translations, and runs after."""
    parts = []
    if c := config.language_id:
        parts.append(lambda c=c: label_languages(c.input, work, shards, c))
    if c := config.image_selection:
        parts.append(lambda c=c: select_geo_diverse(c.input, work, shards, c, config.seed)[:2])
    if c := config.translation:
        def translation(c=c) -> tuple:
            reports, stats, selection = translate_texts(translation_texts(c), work, shards, c)
            publish_report(selection)
            return reports, stats, "Translation", selection["markdown"]
        parts.append(translation)
    if c := config.qa_translation:
        def qa_translation(c=c) -> tuple:
            reports, stats, qa_report = translate_qa_rows(c.input, work, shards, c)
            publish_qa_report(qa_report)
            return reports, stats, "QA translation", qa_report["markdown"]
        parts.append(qa_translation)
    return parts


def download_release_images(c: ImageDownloadConfig, work: str, shards: int) -> tuple[list[StageReport], dict]:
    """`download-images` (its own function) into WORK/image_download/; the input path stays out of the
    params hash (it is fingerprinted as an input), so moving the file does not redo the shards."""
    params = DownloadImagesParams.model_validate(c.model_dump(exclude={"input"}))
    reports, distributions, _ = download_images(c.input, os.path.join(work, DOWNLOAD_FOLDER), shards, params)
    return reports, {f"image_download_{k}": v for k, v in distributions.items()}


def scoring_pairs(config: ReleaseConfig, work: str, folders: dict[str, str], roots: dict[str, str]
                  ) -> tuple[pa.Table, str]:
    """The captions against the images they name, and (when asked) every kept translation against
    the image of its source caption, with id `<caption id>@<target>`; and the folder the images'
    paths are under: the images table's own folder, or for an imported table its import's image root."""
    c = config.scoring
    captions, images = read_input(c.input, CAPTIONS), read_input(c.images, IMAGES)
    pairs = pairs_from_captions(captions, images)
    translated_path = storage.join(work, "translated.parquet")
    if c.include_translations and config.translation and storage.exists(translated_path):
        kept = storage.read_parquet(translated_path).to_pylist()
        # The image of the caption a translation came from: the first row of an id, as ingest keeps it
        # (a repeated id's later rows are refused as duplicate_id, never paired).
        image_of, image_id_of = {}, {}
        for i, path, image_id in zip(pairs.column("id").to_pylist(), pairs.column("image_path").to_pylist(),
                                     pairs.column("image_id").to_pylist()):
            image_of.setdefault(i, path)
            image_id_of.setdefault(i, image_id)
        translated = pa.table({
            "id": [f"{r['id']}@{r['target_language']}" for r in kept],
            "image_path": pa.array([image_of.get(r["id"]) for r in kept], pa.string()),
            "text": [r["text"] for r in kept], "language": [r["target_language"] for r in kept],
            "image_id": pa.array([image_id_of.get(r["id"]) for r in kept], pa.string())})
        pairs = pa.concat_tables([pairs, translated.cast(pairs.schema)])
    if storage.is_url(c.images):
        return pairs, os.path.dirname(c.images)
    folder = os.path.dirname(os.path.abspath(c.images))
    imported = [name for name, out in folders.items() if os.path.abspath(out) == folder]
    return pairs, roots[imported[0]] if imported else folder


def source_fingerprint(path: str) -> dict:
    """Files under an import source, their count and one sha256 over relative names and contents
    (as a local model is fingerprinted: the same download gives the same value on any machine)."""
    entry = model_fingerprint("import", path, path, "import", None)
    return {"files": entry["files"], "sha256": entry["sha256"]}


def recorded_source(work: str, name: str) -> dict:
    """The source fingerprint this build's import NAME recorded (a big download is hashed once a build)."""
    with open(os.path.join(work, "imports", name, RECORD), encoding="utf-8") as f:
        return json.load(f)["record"]["source"]


def run_imports(config: ReleaseConfig, work: str) -> tuple[list, dict[str, str], dict[str, str]]:
    """(stage reports, {name: output folder}, {name: image root}) of every configured import."""
    reports, folders, roots = [], {}, {}
    for name, entry in config.imports.items():
        out = os.path.join(work, "imports", name)
        record = {"format": entry.format, "options": entry.options.model_dump(),
                  "source": source_fingerprint(entry.source)}
        record_path = os.path.join(out, RECORD)
        if not (os.path.exists(record_path) and json.load(open(record_path))["record"] == record):
            import_dataset(entry.format, entry.source, out, entry.options)
            write_json_atomic({"record": record}, record_path)
        report = json.load(open(os.path.join(out, "import_report.json"), encoding="utf-8"))
        if differences := (report.get("publisher_counts") or {}).get("differences"):
            get_logger("xmdata.imports").warning("import %s (%s): %d count(s) differ from the publisher's: %s", name,
                                                 entry.format, len(differences), "; ".join(differences))
        rejects = pq.read_table(os.path.join(out, "rejects.parquet"))
        written = sum(report["written"].values())
        reports.append(step_report(f"import_{name}", written + rejects.num_rows, written, rejects, work))
        folders[name] = out
        roots[name] = os.path.normpath(os.path.join(out, report["image_root"])) if report.get("image_root") else out
    return reports, folders, roots


def resolve_built(config: ReleaseConfig, folders: dict[str, str], work: str) -> ReleaseConfig:
    """Stage inputs written `import:<name>/<file>` as paths into the import's output folder, and
    `image_download:<file>` into WORK/image_download/ (written before any stage that reads it)."""
    for where, value in config.inputs():
        if value.startswith(IMPORTED):
            name, _, file = value[len(IMPORTED):].partition("/")
            path = os.path.join(folders[name], file)
        elif value.startswith(DOWNLOADED):
            path = os.path.join(work, DOWNLOAD_FOLDER, value[len(DOWNLOADED):])
        else:
            continue
        section, key = where.split(".")
        config = replaced(config, (section,), {key: path})
    return config
