"""The `embed` step of MMMEB: every query and every candidate of the benchmark encoded by one system,
in the same space. A system that cannot take what a row needs (an image and a text together, for VQA
and VG queries, with a CLIP-like model) refuses it with that reason; it is never silently dropped.

Texts go in as the dataset has them, except class names, which get the paper's "image of" prefix in
the row's language (xVLM2Vec, Section 6: CLIP and SigLIP systems get no other formatting)."""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa

from xmdata.data import DATA_DIR

from xmdata.tasks.build.rejects import concat_rejects, make_rejects

PROMPTS = os.path.join(DATA_DIR, "mmmeb_prompts.json")


def load_prompts() -> dict:
    return json.load(open(PROMPTS, encoding="utf-8"))


def clip_text(row: dict, prefixes: dict) -> str:
    return f"{prefixes[row['language']]} {row['text']}" if row["task"] == "C" else row["text"]


def open_image(row: dict, roots: dict[str, str]):
    """The row's image, RGB, cropped to its box; or (reason, message) when it is refused. Opened as
    every image reader opens one (image_decode.open_image): inside its source's root, and at most
    DEFAULT_MAX_PIXELS, checked on the header before any decoding. A file that cannot be read or
    decoded keeps this step's reason, unreadable_image."""
    from xmdata.tasks.build.image_decode import Decoded, ImageRef, open_image as open_checked
    from xmdata.tasks.stage_params import DEFAULT_MAX_PIXELS

    source, _, path = row["image"].partition("/")
    opened = open_checked(ImageRef(path=path), roots[source], DEFAULT_MAX_PIXELS)
    if isinstance(opened, Decoded):
        kept = opened.reason in ("image_too_large", "path_outside_root")
        return (opened.reason if kept else "unreadable_image", f"{row['image']}: {opened.message}")
    with opened:
        image = opened.convert("RGB")
    return image.crop(tuple(row["box"])) if row.get("box") else image


def embed_rows(embedder, rows: list[dict], roots: dict[str, str], stage: str, prefixes: dict):
    """(ids kept, their embeddings, rejects): text-only rows as texts, image-only rows as images."""
    texts, images, refused = [], [], []
    text_only = getattr(embedder, "modalities", ("text", "image")) == ("text",)
    for row in rows:
        if row["image"] and row["text"]:
            refused.append(make_rejects(stage, "needs_image_and_text", [row["id"]], [row["task"]]))
        elif row["image"] and text_only:
            refused.append(make_rejects(stage, "text_only_model", [row["id"]], [row["task"]]))
        elif row["image"]:
            try:
                image = open_image(row, roots)
            except (OSError, ValueError) as exc:
                image = ("unreadable_image", f"{row['image']}: {exc}")
            if isinstance(image, tuple):
                refused.append(make_rejects(stage, image[0], [row["id"]], [image[1]]))
            else:
                images.append((row["id"], image))
        else:
            texts.append((row["id"], clip_text(row, prefixes)))
    vectors = [embedder.embed_texts([t for _, t in texts]), embedder.embed_images([i for _, i in images])]
    ids = [i for i, _ in texts] + [i for i, _ in images]
    return ids, np.concatenate(vectors) if ids else np.zeros((0, 1), np.float32), concat_rejects(refused)


def embed_benchmark(embedder, queries: pa.Table, candidates: pa.Table, roots: dict[str, str], system: str):
    """{queries, candidates}: (id, embedding) tables of one system, and its rejects."""
    prefixes = load_prompts()["clip_class_prefix"]
    stage = f"mmmeb_embed_{system}"
    tables, rejects = {}, []
    for name, rows in (("queries", queries.drop_columns(["pool", "gold", "gold_position"]).to_pylist()),
                       ("candidates", candidates.to_pylist())):
        ids, vectors, refused = embed_rows(embedder, rows, roots, stage, prefixes)
        order = np.argsort(np.asarray(ids, dtype=object)) if ids else []
        width = vectors.shape[1] if len(ids) else 0
        tables[name] = pa.table({"id": pa.array([ids[i] for i in order], pa.string()),
                                 "embedding": pa.array([vectors[i].tolist() for i in order],
                                                       pa.list_(pa.float32(), width) if width else pa.list_(pa.float32()))})
        rejects.append(refused)
    return tables, concat_rejects(rejects)
