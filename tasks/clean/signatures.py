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
HASH_MEMO_KIND = "image_hashes"
# What a shard's params hold that does not decide one image's perceptual hashes (the memo's key leaves
# them out; tests/clean/test_hash_memo.py proves each): the captions' options and the embedding model.
HASH_MEMO_EXCLUDE = ("kind", "text_signatures", "num_perm", "model")
HASH_MEMO_CHUNK = 256  # images read, looked up and hashed at a time: what a shard holds in memory at once


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
    hashed = kind == "images" and params.image_hash
    return Stage(STAGE, version="1", fn=sign_rows, params=shard, inline_rows=20_000 if kind == "captions" else 0,
                 memo_kinds=(HASH_MEMO_KIND,) if hashed else (), memo_exclude=HASH_MEMO_EXCLUDE)


def sign_rows(table: pa.Table, params: SignatureShard) -> tuple[pa.Table, pa.Table]:
    return (sign_images if params.kind == "images" else sign_captions)(table, params)


def sign_images(table: pa.Table, params: SignatureShard) -> tuple[pa.Table, pa.Table]:
    kept, missing = split_by_mask(table, pc.is_null(table.column(RESOLVED)), STAGE, UNREADABLE, "path")
    paths = kept.column(RESOLVED).to_pylist()
    errors: list[str | None] = [None] * len(paths)
    if params.image_hash:
        hashes, errors = hashes_in_memo(paths, params.max_image_pixels)
    if params.model is not None:  # the images the hashes could read (all of them, without the hashes)
        vectors, embed_errors = _embed_images(params.model, paths, params.max_image_pixels, errors)
        errors = [e if e is not None else f for e, f in zip(errors, embed_errors)]
    bad = pa.array([e is not None for e in errors], pa.bool_())
    ids = kept.column("id").to_pylist()
    refused = concat_rejects([make_rejects(STAGE, reason, [i], [f"{p}: {why.strip()}"]) for i, p, e in zip(ids, paths, errors)
                              if e is not None for reason, _, why in [e.partition(":")]])
    good = np.array([e is None for e in errors], bool)
    kept = kept.filter(pc.invert(bad))
    if params.image_hash:
        kept = kept.append_column("image_hashes", pa.array(list(hashes[good]), pa.list_(pa.uint64())))
    if params.model is not None:
        kept = kept.append_column("embedding", pa.array([vectors[row] for row in np.flatnonzero(good)],
                                                        pa.list_(pa.float32())))
    return kept, concat_rejects([missing, refused])


def hashes_in_memo(paths: list[str], max_pixels: int) -> tuple[np.ndarray, list[str | None]]:
    """hash_images, with each image's hashes kept in the memo of model work by the sha256 of its bytes
    (runtime/memo.py): an image seen by any earlier build — under another path, in another output —
    is read and hashed by content, not decoded. The pixel limit is in the key (a params field), and
    an image that failed is never stored: it is tried again, and refused again, on every build."""
    from xmdata.runtime.memo import MISSING
    from xmdata.tasks.build.image_decode import RESOLVED_PATHS, ImageRef, image_digests
    from xmdata.tasks.build.unit_memo import memo_for

    from .image_hash import VIEWS, hash_images

    unit_memo = memo_for(HASH_MEMO_KIND)
    if unit_memo is None:
        return hash_images(paths, max_pixels)
    hashes = np.zeros((len(paths), VIEWS), np.uint64)
    errors: list[str | None] = [None] * len(paths)
    for start in range(0, len(paths), HASH_MEMO_CHUNK):
        rows = range(start, min(start + HASH_MEMO_CHUNK, len(paths)))
        found_digests = image_digests([ImageRef(path=paths[row]) for row in rows], RESOLVED_PATHS)
        digests = {row: digest for row, digest in zip(rows, found_digests) if digest is not None}
        held = dict(zip(digests, unit_memo.lookup([[d] for d in digests.values()])))
        first: dict[object, int] = {}  # one image under two paths: hashed once
        for row in rows:
            if held.get(row, MISSING) is MISSING:
                first.setdefault(digests.get(row, row), row)  # unreadable: its own, hash_images says why
        unique = list(first.values())
        # From the path, as without the memo: the same decoding and the same reasons for a refusal.
        found = dict(zip(unique, zip(*hash_images([paths[row] for row in unique], max_pixels)))) if unique else {}
        unit_memo.counts.computed += len(unique)
        stored = [row for row in unique if row in digests and found[row][1] is None]
        if stored:
            unit_memo.store([[digests[row]] for row in stored], [[int(h) for h in found[row][0]] for row in stored])
        for row in rows:
            if row in held and held[row] is not MISSING:
                hashes[row] = np.array(held[row], np.uint64)
            else:
                hashes[row], errors[row] = found[first[digests.get(row, row)]]
    return hashes, errors


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
        kept = kept.append_column("embedding", _embed(params.model, texts))
    return kept, empty


def _embed(spec: ModelSpec, texts: list) -> pa.Array:
    from xmdata.models.registry import get_model

    vectors = get_model("embedder", spec).embed_texts(texts)
    return pa.array(list(vectors.astype(np.float32)), pa.list_(pa.float32()))


def _embed_images(spec: ModelSpec, paths: list[str], max_pixels: int,
                  skip: list[str | None]) -> tuple[dict[int, np.ndarray], list[str | None]]:
    """({row: embedding}, per row None or why its image was refused, "reason: message") for the rows
    whose `skip` is None: decoded in this worker's decoder processes as every image reader is, at most
    `max_pixels` pixels, by the model's own recipe (tasks/build/image_embed.py)."""
    from xmdata.models.registry import get_model
    from xmdata.tasks.build.image_decode import RESOLVED_PATHS, ImageRef, reader_reason
    from xmdata.tasks.build.image_embed import embed_image_refs

    rows = [row for row, why in enumerate(skip) if why is None]
    vectors, failures = embed_image_refs(get_model("embedder", spec), [ImageRef(path=paths[row]) for row in rows],
                                         RESOLVED_PATHS, max_pixels)
    errors: list[str | None] = [None] * len(paths)
    for k, (reason, message) in failures.items():
        errors[rows[k]] = f"{reader_reason(reason, UNREADABLE)}: {message}"  # the hashes' reasons
    return {rows[k]: vector for k, vector in vectors.items()}, errors
