"""Score first: the per-shard stage that gives every row what its matchers compare — an image's
perceptual hashes (and its embedding when a model is named), a caption's normalised text and MinHash
signature (and its text embedding). Resumable by shard like every stage; references go through the
same stage into folders of their own, so a reference is hashed once and reused by every later run.

An image that cannot be read is refused as `unreadable_image` (with why), a caption with no text
as `empty_text`: counted, never a crash, never skipped in silence.
"""
from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from xmdata.models.base import ModelSpec
from xmdata.runtime.params import Params
from xmdata.runtime.stage import Stage
from xmdata.tasks.build.rejects import blank_mask, concat_rejects, make_rejects, split_by_mask

from .inputs import RESOLVED
from .params import CleanParams

STAGE = "clean_signatures"
UNREADABLE = "unreadable_image"


class SignatureShard(Params):
    """What a shard's signatures depend on (thresholds do not: changing one re-matches, never re-hashes)."""
    kind: Literal["images", "captions"]
    image_hash: bool
    text_signatures: bool
    num_perm: int = CleanParams.model_fields["num_perm"]  # the one declaration, bounds included
    max_image_pixels: int = CleanParams.model_fields["max_image_pixels"]
    model: ModelSpec | None = None


def embedding_spec(params: CleanParams) -> ModelSpec | None:
    """The embedding tier's model: `model`, else the `reference_model` an embeddings folder was made with."""
    name = params.model or params.reference_model
    if not name:
        return None
    return ModelSpec(params.model_backend, name, options={"pretrained": params.pretrained} if params.pretrained else {})


def embedding_dim(spec: ModelSpec) -> int:
    """The model's embedding width, from its config alone (no weights loaded): a local folder's open_clip
    config JSON, else open_clip's registry (a ModelError for a name it does not know)."""
    from xmdata.models.base import ModelError, resolve_local_path

    if spec.backend == "copy_detection":  # TorchScript records no width: one blank image through it
        from xmdata.models.registry import get_model

        return get_model("embedder", spec).embedding_dim()
    if spec.is_local:
        import json
        from pathlib import Path

        from xmdata.models.open_clip_scorer import local_model_config

        folder = Path(resolve_local_path(spec))
        name, _ = local_model_config(folder)
        return int(json.loads((folder / f"{name}.json").read_text(encoding="utf-8"))["embed_dim"])
    import open_clip

    config = open_clip.get_model_config(spec.name_or_path)
    if not config:
        raise ModelError(f"open_clip: no model named {spec.name_or_path!r}")
    return int(config["embed_dim"])


def signature_stage(kind: str, params: CleanParams, model: ModelSpec | None) -> Stage:
    shard = SignatureShard(kind=kind, image_hash=params.image_hash, text_signatures=params.exact_text or params.minhash,
                           num_perm=params.num_perm, max_image_pixels=params.max_image_pixels, model=model)
    return Stage(STAGE, version="1", fn=sign_rows, params=shard, inline_rows=20_000 if kind == "captions" else 0)


def sign_rows(table: pa.Table, params: SignatureShard) -> tuple[pa.Table, pa.Table]:
    return (sign_images if params.kind == "images" else sign_captions)(table, params)


def sign_images(table: pa.Table, params: SignatureShard) -> tuple[pa.Table, pa.Table]:
    from .image_hash import hash_images

    kept, missing = split_by_mask(table, pc.is_null(table.column(RESOLVED)), STAGE, UNREADABLE, "path")
    paths = kept.column(RESOLVED).to_pylist()
    hashes, errors = hash_images(paths, params.max_image_pixels)
    bad = pa.array([e is not None for e in errors], pa.bool_())
    ids = kept.column("id").to_pylist()
    refused = concat_rejects([make_rejects(STAGE, reason, [i], [f"{p}: {why.strip()}"]) for i, p, e in zip(ids, paths, errors)
                              if e is not None for reason, _, why in [e.partition(":")]])
    good = np.array([e is None for e in errors], bool)
    kept = kept.filter(pc.invert(bad))
    if params.image_hash:
        kept = kept.append_column("image_hashes", pa.array(list(hashes[good]), pa.list_(pa.uint64())))
    if params.model is not None:
        kept = kept.append_column("embedding", _embed(params.model, kept.column(RESOLVED).to_pylist(), "images"))
    return kept, concat_rejects([missing, refused])


def sign_captions(table: pa.Table, params: SignatureShard) -> tuple[pa.Table, pa.Table]:
    from .text_match import minhash_signatures, normalize_caption

    kept, empty = split_by_mask(table, blank_mask(table.column("text")), STAGE, "empty_text", "text")
    texts = kept.column("text").to_pylist()
    if params.text_signatures:
        normalised = [normalize_caption(t) for t in texts]
        kept = kept.append_column("normalised_text", pa.array(normalised, pa.string()))
        signatures = minhash_signatures(normalised, params.num_perm)
        kept = kept.append_column("minhash", pa.array(list(signatures), pa.list_(pa.uint32())))
    if params.model is not None:
        kept = kept.append_column("embedding", _embed(params.model, texts, "captions"))
    return kept, empty


def _embed(spec: ModelSpec, items: list, kind: str) -> pa.Array:
    from xmdata.models.registry import get_model

    embedder = get_model("embedder", spec)
    if kind == "images":
        from PIL import Image

        vectors = embedder.embed_images([Image.open(p).convert("RGB") for p in items])
    else:
        vectors = embedder.embed_texts(items)
    return pa.array(list(vectors.astype(np.float32)), pa.list_(pa.float32()))
