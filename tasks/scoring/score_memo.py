"""Scoring's units in the memo of model work (runtime/memo.py): an image's embedding, keyed by the
sha256 of its bytes, and a text's, keyed by the text the model reads (prefix included) — kept apart,
so an edited caption reuses its image's embedding and a new image its captions'.

Both are exact: every embedding call holds `batch_size` inputs (score.embed_with_backoff), so an
embedding does not depend on its batch-mates. An image served from the memo still goes through the
checks a decode makes first (`open_image`: inside the image root, the pixel limit, a readable
header), so a path outside the root or an image over the limit is refused as without the memo; what
it skips is the decode, the preprocess and the model. Failures and results of a batch that ran out
of memory are never stored.
"""
from __future__ import annotations

import base64
from dataclasses import dataclass, field

import numpy as np

from xmdata.models.base import ModelSpec
from xmdata.runtime.memo import MISSING, UnitMemo, served_and_computed
from xmdata.tasks.build.image_decode import DIGEST_CHUNK, Decoded, ImageRef, image_digests, open_image
from xmdata.tasks.build.unit_memo import memo_for

TEXT_KIND, IMAGE_KIND = "clip_text", "clip_image"
# What a scoring shard's params hold that does not decide one embedding (the memo's key leaves them
# out; tests/scoring/test_score_memo.py proves each): where images are and how rows name their texts
# (the key is the content), what is written (embeddings, the score's weight), the pixel limit (its
# check runs on a hit too) and the model's path (its content is in the key).
MEMO_EXCLUDE = ("model.name_or_path", "image_root", "references_column", "embeddings", "weight", "prefix",
                "max_pixels")
CHUNK_BATCHES = 8  # texts: this many batches computed, then stored, at a time


def packed(vector: np.ndarray) -> str:
    """An embedding as a memo value: its float32 bytes (little-endian), base64 — exact, and a quarter
    of the JSON of its numbers."""
    return base64.b64encode(np.asarray(vector, "<f4").tobytes()).decode("ascii")


def unpacked(value: str) -> np.ndarray:
    return np.frombuffer(base64.b64decode(value), "<f4").astype(np.float32)


def texts_with_memo(spec: ModelSpec, texts: list[str], batch_size: int, width: int,
                    encode) -> tuple[np.ndarray, set[int]]:
    """(embeddings, indices of texts that failed) as `encode(texts)` gives them, the memo's where it
    holds them. `encode` returns (embeddings, failed indices, whether no batch ran out of memory)."""
    unit_memo = memo_for(TEXT_KIND, spec)
    if unit_memo is None:
        embeddings, failed, _ = encode(texts)
        return embeddings, failed

    def compute(positions: list[int]) -> tuple[list, bool]:
        embeddings, failed, whole = encode([texts[p] for p in positions])
        return [None if i in failed else packed(row) for i, row in enumerate(embeddings)], whole

    values = served_and_computed(unit_memo, [[t] for t in texts], compute, batch_size * CHUNK_BATCHES,
                                 storable=lambda value: value is not None)
    embeddings = np.zeros((len(texts), width), np.float32)
    failed = set()
    for i, value in enumerate(values):
        if value is None:
            failed.add(i)
        else:
            embeddings[i] = unpacked(value)
    return embeddings, failed


@dataclass
class ImagesInMemo:
    """A shard's distinct images split by the memo: `held` embeddings, `refused` by the checks a decode
    makes first, and the indices still to decode and embed (`todo`, in order)."""
    unit_memo: UnitMemo | None
    held: dict[int, np.ndarray] = field(default_factory=dict)
    refused: dict[int, tuple[str, str]] = field(default_factory=dict)
    todo: list[int] = field(default_factory=list)
    digests: dict[int, str] = field(default_factory=dict)

    def store(self, embeddings: np.ndarray, failures: dict[int, tuple[str, str]], whole: bool) -> None:
        """The embeddings just computed for `todo` (row k of `embeddings` is todo[k]); `failures` by
        that position. Nothing of a shard whose image batches ran out of memory."""
        if self.unit_memo is None:
            return
        self.unit_memo.counts.computed += len(self.todo)
        kept = [k for k, i in enumerate(self.todo) if k not in failures and i in self.digests] if whole else []
        if kept:
            self.unit_memo.store([[self.digests[self.todo[k]]] for k in kept], [packed(embeddings[k]) for k in kept])


def images_in_memo(spec: ModelSpec, images: list[ImageRef], root: str | None, max_pixels: int) -> ImagesInMemo:
    """Which of `images` the memo holds (by the sha256 of their bytes), after the checks a decode
    makes first; the rest are to be decoded (an image that cannot be read is left to the decoder,
    which says why as without the memo)."""
    found = ImagesInMemo(memo_for(IMAGE_KIND, spec))
    if found.unit_memo is None:
        found.todo = list(range(len(images)))
        return found
    # Read and hashed in threads (the decoders have not started yet), a chunk at a time.
    for start in range(0, len(images), DIGEST_CHUNK):
        rows = range(start, min(start + DIGEST_CHUNK, len(images)))
        _split(found, images, rows, dict(zip(rows, image_digests([images[i] for i in rows], root))), root, max_pixels)
    return found


def _split(found: ImagesInMemo, images: list[ImageRef], rows: range, digests: dict, root: str | None,
           max_pixels: int) -> None:
    """One chunk of `rows` into held (after a decode's first checks), refused and to decode."""
    digests = {i: d for i, d in digests.items() if d is not None}
    found.digests.update(digests)
    values = dict(zip(digests, found.unit_memo.lookup([[d] for d in digests.values()])))
    for i in rows:
        value = values.get(i, MISSING)
        if value is MISSING:
            found.todo.append(i)
            continue
        opened = open_image(images[i], root, max_pixels)  # the root and the pixel limit, as a decode checks them
        if isinstance(opened, Decoded):
            found.refused[i] = (opened.reason, opened.message)
        else:
            opened.close()
            found.held[i] = unpacked(value)
