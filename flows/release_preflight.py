"""Everything a release config's stages would refuse, checked before the first stage writes a file:
inputs against their contracts, language areas, models' paths and languages. A release that would
stop at its fourth stage stops here instead, with the same message and nothing written."""
from __future__ import annotations

import os

import pyarrow.compute as pc

from xmdata.models.base import ModelSpec
from xmdata.models.fasttext_lid import check_fasttext_file
from xmdata.schemas import CAPTIONS, IMAGES, ContractError
from xmdata.schemas.readers import read_any, read_input
from xmdata.tasks.score_input import check_clip_model

from .release_config import ReleaseConfig, load_release_config, with_overrides
from .release_recipe import IMPORTED, ModelChoice


def checked_release(config: str, shards: int | None, seed: int | None, sample: bool = False,
                    models: ModelChoice = "config"):
    """(config with overrides, with tiny models resolved, file text, its sha256, overrides), after
    every check a release makes before its first stage writes."""
    from xmdata.schemas.column_map import column_mapping

    from .release_build import resolve_tiny_models

    parsed, text, text_sha = load_release_config(config, sample, models)
    overrides = {k: v for k, v in {"shards": shards, "seed": seed}.items() if v is not None}
    parsed = with_overrides(parsed, overrides)  # validated: shards 0 from the UI is refused
    resolved = resolve_tiny_models(parsed)
    with column_mapping(parsed.columns):  # the config's `columns:`, as the build applies them
        preflight_release(resolved)
    return parsed, resolved, text, text_sha, overrides


def preflight_release(config: ReleaseConfig) -> None:
    """ContractError or ModelError for the first stage that could not run; CONFIG has tiny models
    resolved to their folders (flows/release_build.resolve_tiny_models)."""
    # An input written import:<name>/<table> exists only once the build's imports ran: the import
    # checks its source, and the stage checks the table it wrote when it reads it.
    if c := config.language_id:
        if not imported(c.input):
            read_input(c.input, CAPTIONS)
        check_fasttext_file(ModelSpec("fasttext", c.lid_model))
    if (c := config.image_selection) and not imported(c.input):
        check_image_inputs(c.input, c.languages)
    if (c := config.translation) and not imported(c.input):
        from .translate import preflight

        preflight(translation_texts(c), c.columns, c.source, c.targets, c.translator, c.filters)
    if (c := config.qa_translation) and not imported(c.input):
        from .translate_qa import preflight_qa

        preflight_qa(c.input, "en", c.targets, c.translator, c.filters)
    if c := config.scoring:
        if not imported(c.input):
            read_input(c.input, CAPTIONS)
        if not imported(c.images) and "path" not in read_input(c.images, IMAGES).column_names:
            raise ContractError(f"scoring.images {c.images}: no path column")
        check_clip_model(c.clip_model, c.pretrained, "scoring.pretrained")


def imported(path: str | None) -> bool:
    return bool(path) and path.startswith(IMPORTED)


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
    from xmdata.tasks.image_folder import require_photos
    from xmdata.tasks.language_areas import load_language_areas

    try:
        load_language_areas(languages)
    except (OSError, ValueError) as exc:
        source = languages or "language areas"
        raise ContractError(str(exc) if str(exc).startswith(source) else f"{source}: {exc}") from exc
    if os.path.isdir(input_path):
        require_photos(input_path)
    else:
        read_input(input_path, IMAGES)
