"""The pairs a scoring run reads: a file or a table, checked against the contract, or built from
captions (or translations) joined to their images by image_id."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.data import sample_path
from xmdata.runtime import storage
from xmdata.schemas import CAPTIONS, IMAGES, ContractError
from xmdata.schemas.readers import read_any, read_input
from xmdata.schemas.scoring import check_image_columns, score_input_contract
from xmdata.schemas.validate import conform


def read_score_input(source: str | pa.Table, references_column: str | None = None) -> pa.Table:
    """The pairs, conformed, or a ContractError (before anything is written) naming what is wrong."""
    contract = score_input_contract(references_column)
    raw, name = (source, "pairs table") if isinstance(source, pa.Table) else (read_any(source), source)
    check_image_columns(raw.column_names, name)
    return conform(raw, contract, source=name)


def check_score_run(source: str | pa.Table, params, image_root: str,
                    references_column: str | None = None) -> pa.Table:
    """Everything a scoring run refuses before a file is written, in one place for every door (the
    command line, before any server starts; the flow, for a UI form or a Python caller, unless the
    command line did): the pairs against the contract, the image root, the model, and that some pair
    could score. Returns the pairs."""
    pairs = read_score_input(source, references_column)
    if storage.is_url(image_root):
        from xmdata.runtime.storage_check import check_location

        check_location(image_root, "the image root (--image-root)")
    elif not os.path.isdir(image_root):
        raise ContractError(f"the image root (--image-root) {image_root}: not a folder")
    check_clip_model(params.clip_model, params.pretrained)
    check_some_pair_scorable(pairs, image_root, source if isinstance(source, str) else "the pairs to score")
    return pairs


def check_some_pair_scorable(pairs: pa.Table, image_root: str, where: str) -> None:
    """A whole input that no row of could score is refused in one line before anything is written:
    every row without a text or an image, or no image path reaching a readable file under the image
    root (checked over the distinct paths, stopping at the first found). A stage would otherwise
    reject every row for that one reason and end `done`. A root in an object store is not listed."""
    from collections import Counter

    from xmdata.tasks.build.image_decode import resolve_under_root
    from xmdata.tasks.scoring.pairs import unscorable

    errors = unscorable(pairs)
    if pairs.num_rows and all(errors):
        counts = ", ".join(f"{n} {reason}" for reason, n in Counter(e[0] for e in errors).most_common())
        raise ContractError(f"{where}: no pair can be scored ({counts}): every row lacks a text or an image")
    if storage.is_url(image_root) or ("image_bytes" in pairs.column_names and pairs.column("image_bytes").null_count
                                      < pairs.num_rows):
        return  # images in an object store, or carried in the table
    paths = [p for p in dict.fromkeys(pairs.column("image_path").to_pylist()) if (p or "").strip()]
    inside = 0
    for path in paths:
        if (full := resolve_under_root(image_root, path)) is not None:
            inside += 1
            if os.path.isfile(full) and os.access(full, os.R_OK):
                return
    if paths:
        why = (f"climbs out of the image root {image_root} (path_outside_root)" if not inside else
               f"is a readable file under the image root {image_root} (missing_image)")
        raise ContractError(f"{where}: none of the {len(paths)} image paths {why}, e.g. {paths[0]!r}; "
                            f"every pair would be refused")


def check_clip_model(clip_model: str, pretrained: str | None, option: str = "--pretrained") -> None:
    """A local model folder or checkpoint that is missing, or a hub name without pretrained weights,
    refused before a run writes anything (a shard would fail on it after the ingest)."""
    from xmdata.models.base import ModelError, ModelSpec, looks_like_path, resolve_local_path

    if looks_like_path(clip_model):
        path = resolve_local_path(ModelSpec("open_clip", clip_model))
        if os.path.isdir(path):
            from pathlib import Path

            from xmdata.models.open_clip_scorer import local_model_config

            if local_model_config(Path(path))[1] is None and not pretrained:
                raise ModelError(f"open_clip: {path} holds no weights (open_clip_model.safetensors) and no "
                                 f"{option} was given: random weights score nothing")
    elif not pretrained:
        raise ModelError(f"open_clip: {clip_model!r} needs {option} (a tag such as frozen_laion5b_s13b_b90k, "
                         f"or a checkpoint path): random weights score nothing")
    if pretrained and looks_like_path(pretrained):
        resolve_local_path(ModelSpec("open_clip", pretrained))


def pairs_from_captions(captions: pa.Table, images: pa.Table) -> pa.Table:
    """Score input from texts with an image_id and images with a path: id, image_path, text, language
    and image_id. A text whose image is unknown keeps a null path (refused as no_image_reference)."""
    paths = dict(zip(images.column("id").to_pylist(), images.column("path").to_pylist()))
    image_ids = captions.column("image_id").to_pylist()
    return pa.table({
        "id": captions.column("id"),
        "image_path": pa.array([paths.get(i) for i in image_ids], pa.string()),
        "text": captions.column("text"),
        "language": captions.column("language") if "language" in captions.column_names
        else pa.nulls(captions.num_rows, pa.string()),
        "image_id": pc.cast(captions.column("image_id"), pa.string()),
    })


def demo_score_input() -> tuple[pa.Table, str]:
    """(pairs, image root) for the demo: the sample captions against the sample images they name."""
    captions = read_input(sample_path("captions.jsonl"), CAPTIONS)
    images = read_input(sample_path("images.csv"), IMAGES)
    return pairs_from_captions(captions, images), os.path.dirname(sample_path("images.csv"))
