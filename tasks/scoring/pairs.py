"""A shard's pairs as the model needs them: each distinct image and text once, and per row which.

Captions, translations and foils of one image share that image, and references repeat across the
rows of an image, so a shard decodes and encodes far fewer images and texts than it has rows.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import pyarrow as pa

from xmdata.tasks.build.image_decode import ImageRef
from xmdata.tasks.build.rejects import blank_mask


@dataclass
class ShardPairs:
    """Distinct images and texts of a shard; per row their indices, or why the row is refused."""

    images: list[ImageRef] = field(default_factory=list)
    texts: list[str] = field(default_factory=list)
    image_of: list[int] = field(default_factory=list)  # -1 for a row refused before decoding
    text_of: list[int] = field(default_factory=list)
    refs_of: list[list[int]] = field(default_factory=list)  # indices into texts; [] without references
    errors: list[tuple[str, str] | None] = field(default_factory=list)  # (reason, message)


def _column(table: pa.Table, name: str | None) -> list:
    return table.column(name).to_pylist() if name and name in table.column_names else [None] * table.num_rows


def with_prefix(prefix: str, text: str) -> str:
    # As the reference implementation does: a prefix always ends in one space before the text.
    return f"{prefix.rstrip(' ')} {text}" if prefix else text


def unscorable(table: pa.Table) -> list[tuple[str, str] | None]:
    """Per row, (reason, message) when the stage cannot score it, else None: also what `xmdata
    validate` reports for a scoring input."""
    rows = zip(blank_mask(table.column("text")).to_pylist(), _column(table, "image_path"), _column(table, "image_bytes"))
    return [("empty_text", "the text is empty") if is_empty else
            ("no_image_reference", "the row has neither an image_path nor image_bytes")
            if data is None and not (path or "").strip() else None
            for is_empty, path, data in rows]


def collect_pairs(table: pa.Table, references_column: str | None, prefix: str) -> ShardPairs:
    """Rows with an empty text or no image reference are refused here; the rest get indices."""
    pairs = ShardPairs()
    image_index: dict[object, int] = {}
    text_index: dict[str, int] = {}

    def text_id(text: str) -> int:
        text = with_prefix(prefix, text)
        if text not in text_index:
            text_index[text] = len(pairs.texts)
            pairs.texts.append(text)
        return text_index[text]

    rows = zip(table.column("text").to_pylist(), unscorable(table), _column(table, "image_path"),
               _column(table, "image_bytes"), _column(table, references_column))
    for text, error, path, data, refs in rows:
        pairs.errors.append(error)
        if error is not None:
            pairs.image_of.append(-1)
            pairs.text_of.append(-1)
            pairs.refs_of.append([])
            continue
        # Bytes win over a path when a row has both (a path beside bytes is provenance, as in HF datasets).
        key = ("bytes", hashlib.blake2b(data, digest_size=16).digest()) if data is not None else ("path", path)
        if key not in image_index:
            image_index[key] = len(pairs.images)
            pairs.images.append(ImageRef(data=data) if data is not None else ImageRef(path=path))
        pairs.image_of.append(image_index[key])
        pairs.text_of.append(text_id(text))
        pairs.refs_of.append([text_id(r) for r in refs or [] if r is not None and r.strip()])
    return pairs
