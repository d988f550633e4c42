"""What `contamination --against REF` compares with. A reference is one of:
- a folder of image files, searched recursively (`match_id`: the file's path relative to the folder);
- an images or captions table (`match_id`: its id);
- a release folder (one with manifest.json): its published tables of the input's kind;
- a clip-retrieval embeddings folder (img_emb/ or text_emb/ with metadata/): searched with the
  embedding tier only, with the input embedded by `--reference-model`.
Each is opened and checked before anything is written: a reference that does not exist, is empty or
cannot be compared with the input is refused in one line (ContractError, exit 2).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

import pyarrow as pa

from xmdata.schemas import ContractError

from .inputs import RESOLVED, read_clean_input, table_kind

IMAGE_SUFFIXES = (".jpg", ".jpeg", ".png", ".webp", ".gif", ".bmp", ".tif", ".tiff")
EMBEDDING_FOLDERS = {"images": "img_emb", "captions": "text_emb"}


@dataclass
class Reference:
    source: str  # as given: the matches' match_source
    kind: str  # images | captions | embeddings
    table: pa.Table | None = None  # images (id, path) or captions (id, text, language…)
    folder: str | None = None  # an embeddings folder


def open_reference(source: str, input_kind: str, reference_model: str | None) -> Reference:
    path = os.path.abspath(source)
    if not os.path.exists(path):
        raise ContractError(f"reference {source}: not found")
    if os.path.isfile(path):
        kind, table = read_clean_input(path)
        return _same_kind(Reference(source, kind, table), input_kind)
    if any(os.path.isdir(os.path.join(path, f)) for f in EMBEDDING_FOLDERS.values()):
        return embeddings_reference(source, path, input_kind, reference_model)
    if os.path.isfile(os.path.join(path, "manifest.json")):
        return release_reference(source, path, input_kind)
    return _same_kind(image_folder_reference(source, path), input_kind)


def reference_kinds(source: str) -> set[str]:
    """Which kinds of table a reference can be compared with, from its shape alone (a release or an
    embeddings folder may hold both); a reference that does not exist is refused."""
    path = os.path.abspath(source)
    if not os.path.exists(path):
        raise ContractError(f"reference {source}: not found")
    if os.path.isfile(path):
        from xmdata.schemas.readers import read_any

        return {table_kind(read_any(path).column_names, source)}
    embedded = {kind for kind, folder in EMBEDDING_FOLDERS.items() if os.path.isdir(os.path.join(path, folder))}
    if embedded:
        return embedded
    return {"images", "captions"} if os.path.isfile(os.path.join(path, "manifest.json")) else {"images"}


def _same_kind(ref: Reference, input_kind: str) -> Reference:
    if ref.kind != input_kind:
        raise ContractError(f"reference {ref.source}: holds {ref.kind}, the input holds {input_kind}: "
                            "they cannot be compared")
    return ref


def image_folder_reference(source: str, path: str) -> Reference:
    files = sorted(os.path.relpath(os.path.join(d, f), path) for d, _, names in os.walk(path, followlinks=True)
                   for f in names if f.lower().endswith(IMAGE_SUFFIXES))
    if not files:
        raise ContractError(f"reference {source}: a folder with no image files ({', '.join(IMAGE_SUFFIXES)}), "
                            "no manifest.json and no img_emb/ or text_emb/")
    return Reference(source, "images", pa.table({"id": files, "path": files,
                                                 RESOLVED: [os.path.join(path, f) for f in files]}))


def release_reference(source: str, path: str, input_kind: str) -> Reference:
    """The release's published tables (data/<table>.parquet, as its manifest lists them) of the input's
    kind: captions tables with a language (compared within one), images tables with a path. An id a table
    shares with an earlier one (a caption published again with its scores) is read once."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from xmdata.tasks.release.manifest import read_manifest

    files = sorted(read_manifest(path)["release"].get("files", {}))
    parts, seen = [], set()
    for name in files:
        if not (name.startswith("data/") and name.endswith(".parquet")):
            continue
        schema = pq.read_schema(os.path.join(path, name))
        try:
            kind = table_kind(schema.names, name)
        except ContractError:
            continue
        if kind != input_kind or (kind == "captions" and "language" not in schema.names):
            continue
        _, table = read_clean_input(os.path.join(path, name))
        table = table.filter(pc.invert(pc.is_in(table.column("id"), pa.array(sorted(seen), pa.string()))))
        seen.update(table.column("id").to_pylist())
        parts.append(table.select([c for c in table.column_names if c in ("id", "path", RESOLVED, "text", "language",
                                                                          "image_id")]))
    if not parts:
        raise ContractError(f"reference {source}: a release with no {input_kind} table to compare with")
    return Reference(source, input_kind, pa.concat_tables(parts, promote_options="default"))


def embeddings_reference(source: str, path: str, input_kind: str, reference_model: str | None) -> Reference:
    folder = EMBEDDING_FOLDERS[input_kind]
    if not os.path.isdir(os.path.join(path, folder)):
        raise ContractError(f"reference {source}: an embeddings folder without {folder}/: it cannot be compared "
                            f"with {input_kind}")
    if not reference_model:
        raise ContractError(f"reference {source}: a clip-retrieval embeddings folder does not record its model; "
                            "name it with --reference-model")
    return Reference(source, "embeddings", folder=path)
