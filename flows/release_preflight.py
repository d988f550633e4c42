"""Everything a release config's stages would refuse, checked before the first stage writes a file:
inputs against their contracts, language areas, models' paths and languages. A release that would
stop at its fourth stage stops here instead, with the same message and nothing written."""
from __future__ import annotations

import os

import pyarrow.compute as pc

from xmdata.models.base import ModelSpec, resolve_local_path
from xmdata.models.fasttext_lid import check_fasttext_file
from xmdata.schemas import CAPTIONS, IMAGES, ContractError
from xmdata.schemas.readers import read_any, read_input
from xmdata.tasks.scoring.input import check_clip_model

from .release_config import TINY, ReleaseConfig, load_release_config, with_overrides
from .release_recipe import IMPORTED, ModelChoice


# `xmdata release` checks its config before any server starts, then runs the flow in its own
# process, which checks again (a UI run has no CLI before it): the CLI leaves the key of what it
# checked here, and the flow's check of that same config text and overrides takes it instead of
# reading every input a second time. Taken once, so a later run in this process checks afresh.
CHECKED_BY_THE_CLI: set[tuple] = set()


def checked_release(config: str, shards: int | None, seed: int | None, sample: bool = False,
                    models: ModelChoice = "config", hand_to_the_flow: bool = False):
    """(config with overrides, with tiny models resolved, file text, its sha256, overrides), after
    every check a release makes before its first stage writes."""
    from xmdata.schemas.column_map import column_mapping

    parsed, text, text_sha = load_release_config(config, sample, models)
    overrides = {k: v for k, v in {"shards": shards, "seed": seed}.items() if v is not None}
    parsed = with_overrides(parsed, overrides)  # validated: shards 0 from the UI is refused
    resolved = resolve_tiny_models(parsed)
    key = (os.path.abspath(config), text_sha, tuple(sorted(overrides.items())), sample, models)
    if key in CHECKED_BY_THE_CLI and not hand_to_the_flow:
        CHECKED_BY_THE_CLI.discard(key)
    else:
        with column_mapping(parsed.columns):  # the config's `columns:`, as the build applies them
            preflight_release(resolved)
        if hand_to_the_flow:
            CHECKED_BY_THE_CLI.add(key)
    return parsed, resolved, text, text_sha, overrides


def resolve_tiny_models(config: ReleaseConfig) -> ReleaseConfig:
    """Replace every `tiny:<backend>` model with the local folder of that tiny model (built once,
    with the config's seed, into XMDATA_CACHE)."""
    data = config.model_dump()
    sections = ("translation", "qa_translation", "benchmarks")
    refs = [(data[s]["translator"], "model") for s in sections if data.get(s)]
    refs += [(f, "qe_model") for s in sections if data.get(s) and (f := data[s]["filters"])]
    refs += [(data[s], "clip_model") for s in ("scoring", "benchmarks") if data.get(s)]
    refs += [(system, "model") for system in (data.get("mmmeb") or {}).get("systems", [])]
    if not any(str(holder[key]).startswith(TINY) for holder, key in refs):
        return config
    from xmdata.models.tiny import cached_tiny_models  # imports torch: only when a tiny model is named

    tiny = cached_tiny_models(seed=config.seed)
    for holder, key in refs:
        if str(holder[key]).startswith(TINY):
            backend = holder[key][len(TINY):]
            if backend not in tiny:
                raise ContractError(f"{holder[key]}: no tiny model of that name; known: {', '.join(sorted(tiny))}")
            holder[key] = tiny[backend].name_or_path
            if key == "clip_model" or holder.get("backend") == "open_clip":
                holder["pretrained"] = tiny[backend].option("pretrained")
    return ReleaseConfig.model_validate(data)


def preflight_release(config: ReleaseConfig) -> None:
    """ContractError or ModelError for the first stage that could not run; CONFIG has tiny models
    resolved to their folders (resolve_tiny_models)."""
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

        preflight_qa(c.input, c.source, c.targets, c.translator, c.filters)  # as translate_qa_rows runs it
    if c := config.scoring:
        if not imported(c.input):
            read_input(c.input, CAPTIONS)
        if not imported(c.images) and "path" not in read_input(c.images, IMAGES).column_names:
            raise ContractError(f"scoring.images {c.images}: no path column")
        check_clip_model(c.clip_model, c.pretrained, "scoring.pretrained")
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
