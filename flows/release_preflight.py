"""Everything a release would refuse, checked once per command before the first stage writes a file:
the config, its inputs against their contracts, language areas, the build folder, models' paths and
languages. `xmdata release` checks and hands the checked Release to the flow; a run from the UI or
Python checks in the flow. A release that would stop at its fourth stage stops here instead."""
from __future__ import annotations

import os

import pyarrow.compute as pc

from xmdata.models.base import ModelSpec, resolve_local_path
from xmdata.models.fasttext_lid import check_fasttext_file
from xmdata.runtime import storage
from xmdata.schemas import CAPTIONS, IMAGES, ContractError
from xmdata.schemas.readers import read_any, read_input
from xmdata.tasks.scoring.input import check_clip_model, check_some_pair_scorable, pairs_from_captions

from xmdata.tasks.release.embed_images import check_embeddable

from .release_config import ModelChoice, Release, ReleaseConfig, load_release_config
from .release_refs import BUILT, IMPORT_PATH_OPTIONS, resolve_tiny_models


def checked_release(config: str, shards: int | None = None, seed: int | None = None, sample: bool = False,
                    models: ModelChoice = "config", work: str | None = None, images: dict | None = None) -> Release:
    """CONFIG read once and every check a release makes before its first stage writes; the Release
    comes back with its tiny models resolved to their folders (`resolved`, what the build runs)."""
    from xmdata.schemas.column_map import column_mapping
    from xmdata.tasks.release.upload import check_work

    release = load_release_config(config, sample, models, shards, seed, images)
    check_embeddable(release.config)  # embed_images: images tables it can read, named if not (a URL's store unasked)
    check_inputs_exist(release.config)
    check_work(release.config, work)
    resolved = resolve_tiny_models(release.config)
    with column_mapping(release.config.columns):  # the config's `columns:`, as the build applies them
        preflight_release(resolved)
    return release._replace(resolved=resolved)


def check_inputs_exist(config: ReleaseConfig) -> None:
    """Every input file, import source and path option, and benchmark image folder is there (a URL:
    its store's own one-line error); one ContractError lists what is not."""
    from xmdata.runtime.storage_check import check_location

    def exists(path: str, what: str) -> bool:
        if not storage.is_url(path):
            return os.path.exists(path)
        check_location(path, f"release config: {what}", must_exist=True)
        return True

    missing = [f"{where}: {path}" for where, path in config.inputs()
               if not imported(path) and not exists(path, where)]
    # An importer reads a local download (folders, archives): a URL source is refused here.
    missing += [f"imports.{name}.source: {entry.source}" + (" (imports read a local download)"
                                                            if storage.is_url(entry.source) else "")
                for name, entry in config.imports.items() if not os.path.exists(entry.source)]
    missing += [f"imports.{name}.options.{k}: {path}" for name, entry in config.imports.items()
                for k in IMPORT_PATH_OPTIONS if (path := getattr(entry.options, k)) and not os.path.exists(path)]
    missing += [f"benchmarks.sets.{n}.images: {e.images}" for n, e in
                (config.benchmarks.sets if config.benchmarks else {}).items() if not os.path.isdir(e.images)]
    if missing:
        raise ContractError("release config: input not found: " + "; ".join(missing))


def preflight_release(config: ReleaseConfig) -> None:
    """ContractError or ModelError for the first stage that could not run; CONFIG has tiny models
    resolved to their folders (resolve_tiny_models)."""
    # An input written import:<name>/<table> (or image_download:<table>) exists only once the build's
    # imports (its download) ran: they check their own inputs, and the stage checks the table when it reads it.
    if config.contamination:
        from .release_clean import check_clean_sections

        check_clean_sections(config)
    if (c := config.image_download) and not imported(c.input):
        from xmdata.tasks.images.runs import read_download_input

        read_download_input(c.input, c)  # as download-images checks it
    if c := config.language_id:
        if not imported(c.input):
            read_input(c.input, CAPTIONS)
        check_fasttext_file(ModelSpec("fasttext", c.lid_model))
    if (c := config.image_selection) and not imported(c.input):
        check_image_inputs(c.input, c.languages)
    if (c := config.translation) and not imported(c.input):
        from .translate import preflight

        preflight(translation_texts(c), c)
    if (c := config.qa_translation) and not imported(c.input):
        from .translate_qa import preflight_qa

        preflight_qa(c.input, c)  # as translate_qa_rows runs it
    if c := config.scoring:
        captions = None if imported(c.input) else read_input(c.input, CAPTIONS)
        images = None if imported(c.images) else read_input(c.images, IMAGES)
        if images is not None and "path" not in images.column_names:
            raise ContractError(f"scoring.images {c.images}: no path column")
        check_clip_model(c.clip_model, c.pretrained, "scoring.pretrained")
        if captions is not None and images is not None:  # the pairs as release_build.scoring_pairs makes them
            check_some_pair_scorable(pairs_from_captions(captions, images), storage.absolute(os.path.dirname(c.images)),
                                     f"scoring ({c.input} against {c.images})")
    if c := config.benchmarks:  # its inputs are imports (checked by the import); its models are not
        from .translate import check_before_loading

        # The section has no source: flows/benchmarks.py translates the English sets, from "en".
        check_before_loading(c.translator.spec(), "en", c.targets, c.filters.lid_spec(), c.filters.qe_spec())
        check_clip_model(c.clip_model, c.pretrained, "benchmarks.pretrained")
    for system in config.mmmeb.systems if config.mmmeb else []:
        if system.backend == "open_clip":
            check_clip_model(system.model, system.pretrained, f"mmmeb.systems.{system.name}.pretrained")
        elif (spec := system.spec()).is_local:
            resolve_local_path(spec)


def imported(path: str | None) -> bool:
    """Written by the build itself (an import or the image download): not there before it runs."""
    return bool(path) and path.startswith(BUILT)


def translation_texts(c):
    """The translation section's input, only the source language's rows when it says so."""
    texts = read_any(c.input)
    if c.only_source_language and "language" in texts.column_names:
        texts = texts.filter(pc.equal(pc.cast(texts.column("language"), "string"), c.source))
        if texts.num_rows == 0:
            raise ContractError(f"translation.input {c.input}: no row has language {c.source!r} "
                                f"(set only_source_language: false to translate every row)")
    return texts


def check_image_inputs(input_path: str, languages: str | None) -> None:
    """select-images' inputs: the language-area file, and a photo folder or an images table."""
    from xmdata.tasks.selection.image_folder import require_photos
    from xmdata.tasks.selection.language_areas import load_language_areas

    try:
        load_language_areas(languages)
    except (OSError, ValueError) as exc:
        source = languages or "language areas"
        raise ContractError(str(exc) if str(exc).startswith(source) else f"{source}: {exc}") from exc
    if os.path.isdir(input_path):
        require_photos(input_path)
    else:
        read_input(input_path, IMAGES)
