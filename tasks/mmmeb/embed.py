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


def image_region(row: dict, roots: dict[str, str]):
    """Where the row's image is ("source/path": under its source's root) and its box, if any."""
    from xmdata.tasks.build.image_decode import ImageRef
    from xmdata.tasks.build.image_embed import Region

    source, _, path = row["image"].partition("/")
    return Region(ImageRef(path=path), roots[source], tuple(row["box"]) if row.get("box") else None)


def refusal(row: dict, reason: str, message: str) -> tuple[str, str]:
    """A refused image: the reasons every reader gives alike (image_decode.READER_REASONS), else this
    step's unreadable_image."""
    from xmdata.tasks.build.image_decode import reader_reason

    return reader_reason(reason, "unreadable_image"), f"{row['image']}: {message}"


def embed_rows(embedder, rows: list[dict], roots: dict[str, str], stage: str, prefixes: dict):
    """(ids kept, their embeddings, rejects): text-only rows as texts, image-only rows as images — decoded
    (and cropped to their box) in this worker's decoder processes as every image reader is, at most
    DEFAULT_MAX_PIXELS (tasks/build/image_embed.py)."""
    from xmdata.tasks.build.image_embed import embed_regions
    from xmdata.tasks.stage_params import DEFAULT_MAX_PIXELS

    texts, images, refused = [], [], []  # refused: (row position, rejects), put back in row order below
    text_only = getattr(embedder, "modalities", ("text", "image")) == ("text",)
    for position, row in enumerate(rows):
        if row["image"] and row["text"]:
            refused.append((position, make_rejects(stage, "needs_image_and_text", [row["id"]], [row["task"]])))
        elif row["image"] and text_only:
            refused.append((position, make_rejects(stage, "text_only_model", [row["id"]], [row["task"]])))
        elif row["image"]:
            images.append((position, row))
        else:
            texts.append((row["id"], clip_text(row, prefixes)))
    found, failures = embed_regions(embedder, [image_region(row, roots) for _, row in images], DEFAULT_MAX_PIXELS)
    for k, (reason, message) in failures.items():
        position, row = images[k]
        reason, message = refusal(row, reason, message)
        refused.append((position, make_rejects(stage, reason, [row["id"]], [message])))
    kept = sorted(found)
    vectors = [embedder.embed_texts([t for _, t in texts])] + ([np.stack([found[k] for k in kept])] if kept else [])
    ids = [i for i, _ in texts] + [images[k][1]["id"] for k in kept]
    return (ids, np.concatenate(vectors) if ids else np.zeros((0, 1), np.float32),
            concat_rejects([rejects for _, rejects in sorted(refused, key=lambda item: item[0])]))


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
