"""Model-free near-duplicate images: a perceptual hash of many views, matched by Hamming distance.

One 64-bit DCT hash (pHash: the 8x8 lowest frequencies of a 32x32 grey thumbnail, one bit a
coefficient, set when above their median) finds a copy after resizing, JPEG re-encoding and a
brightness change, but a crop of a few per cent shifts it as far as unrelated photos lie. So each
image is hashed in VIEWS windows: every side cut by 0, 2.5 or 5 % of its length (3**4 = 81 windows,
view 0 the whole image). A crop of up to 5 % from any sides is then within 1.25 % a side of one
view of its original, and two images lie `min(whole A vs every view of B, every view of A vs whole
B)` bits apart. Views of one image that hash alike are searched once.
"""
from __future__ import annotations

import functools
import io
from collections.abc import Sequence

import numpy as np

from xmdata.tasks.clean.pairs import Matches

from xmdata.tasks.clean.params import DEFAULT_MAX_HASH_BITS as DEFAULT_MAX_BITS  # measured: see params.py

BITS = 64
CUTS = (0.0, 0.025, 0.05)  # what each view cuts from each side, as a fraction of that side
WORK = 128  # the grey square every view is cut from
THUMB = 32  # each view's thumbnail; its DCT's 8x8 lowest frequencies make the 64 bits
WINDOWS = len(CUTS) ** 2  # along one axis
VIEWS = WINDOWS**2  # view v cuts CUTS[v // 27 % 3] from the left, [v // 9 % 3] right, [v // 3 % 3] top, [v % 3] bottom


@functools.cache
def _low_frequencies() -> np.ndarray:
    """(WINDOWS, 8, WORK): for each window along an axis (cut a from the start and b from the end, a and
    b in CUTS), the area-averaging resample of that window to THUMB pixels followed by the DCT-II
    rows of the 8 lowest frequencies; a view's 8x8 coefficients are rows @ grey @ columns.T."""
    edges = np.arange(WORK + 1)
    n = np.arange(THUMB)
    dct = np.cos(np.pi * (2 * n[None, :] + 1) * np.arange(8)[:, None] / (2 * THUMB))
    out = []
    for a in CUTS:
        for b in CUTS:
            start, width = a * WORK, (1.0 - a - b) * WORK / THUMB
            lo, hi = start + n * width, start + (n + 1) * width  # each thumbnail pixel's span
            overlap = np.clip(np.minimum(hi[:, None], edges[None, 1:]) - np.maximum(lo[:, None], edges[None, :-1]), 0, None)
            out.append(dct @ (overlap / width))
    stacked = np.stack(out)
    stacked.flags.writeable = False
    return stacked


def hash_image(image) -> np.ndarray:
    """The VIEWS hashes (uint64) of one decoded PIL image."""
    from PIL import Image

    grey = image.convert("L")
    grey = grey.resize((WORK, WORK), Image.BOX if min(grey.size) >= WORK else Image.BICUBIC)
    axis = _low_frequencies().reshape(-1, WORK)  # (windows x 8 frequencies, WORK)
    low = axis @ np.asarray(grey, np.float64) @ axis.T  # [vertical window, k, horizontal window, l]
    low = low.reshape(WINDOWS, 8, WINDOWS, 8).transpose(2, 0, 1, 3).reshape(VIEWS, BITS)  # views ordered (x, y)
    bits = low > np.median(low, axis=1, keepdims=True)
    return (bits.astype(np.uint64) << np.arange(BITS, dtype=np.uint64)).sum(axis=1, dtype=np.uint64)


def _load(source: str | bytes, max_pixels: int):
    """The decoded image, reduced while decoding where the format allows (JPEG), or an error message."""
    from PIL import Image, ImageOps

    try:
        image = Image.open(io.BytesIO(source) if isinstance(source, bytes) else source)
    except Image.DecompressionBombError as exc:
        return f"image_too_large: {exc}"
    except Exception as exc:  # missing, unreadable, not an image
        return f"unreadable_image: {type(exc).__name__}: {exc}"
    with image:
        width, height = image.size
        if width * height > max_pixels:
            return f"image_too_large: {width}x{height} pixels, limit {max_pixels}"
        try:
            image.draft("L", (2 * WORK, 2 * WORK))  # JPEG: decode the grey channel only, scaled down by up to 8
            image.load()
            return ImageOps.exif_transpose(image)
        except Image.DecompressionBombError as exc:
            return f"image_too_large: {exc}"
        except Exception as exc:  # truncated or malformed data surfaces when decoding
            return f"unreadable_image: {type(exc).__name__}: {exc}"


HASH_BATCH = 64  # images a decoder batch holds: only their hashes come back (81 x 8 bytes each)


def hash_one(source: str | bytes, max_pixels: int) -> tuple[np.ndarray | None, str | None]:
    """(VIEWS hashes, None), or (None, why it failed); never raises on one image. Runs in a decoder."""
    image = _load(source, max_pixels)
    if isinstance(image, str):
        return None, image
    try:
        return hash_image(image), None
    except Exception as exc:  # a mode PIL cannot make grey
        return None, f"unreadable_image: {type(exc).__name__}: {exc}"


def _died(source: str | bytes, message: str) -> tuple[None, str]:
    return None, f"decoder_died: {message}"


def hash_images(sources: Sequence[str | bytes], max_pixels: int,
                decoders: int | None = None) -> tuple[np.ndarray, list[str | None]]:
    """Per source (a path, or the encoded bytes): its VIEWS hashes, shape (n, VIEWS) uint64, zeros
    where it failed; and None or why it failed, starting with `unreadable_image:`, `image_too_large:`
    (more than MAX_PIXELS pixels: never decoded) or `decoder_died:`. Never raises on one image.
    Decoded and hashed in this worker's decoder processes (tasks/build/batch_loader.worker_loader)."""
    from functools import partial

    from xmdata.tasks.build.batch_loader import worker_loader

    hashes = np.zeros((len(sources), VIEWS), np.uint64)
    errors: list[str | None] = [None] * len(sources)
    if not len(sources):
        return hashes, errors
    row = 0
    for batch in worker_loader(list(sources), HASH_BATCH, partial(hash_one, max_pixels=max_pixels), decoders, _died):
        for found, error in batch:
            if error is None:
                hashes[row] = found
            errors[row] = error
            row += 1
    return hashes, errors


def _distinct_views(hashes: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct hashes of each row's views (as faiss codes) and the row each belongs to."""
    block = np.sort(hashes[rows], axis=1)
    keep = np.ones(block.shape, bool)
    keep[:, 1:] = block[:, 1:] != block[:, :-1]
    return np.ascontiguousarray(block[keep]).view(np.uint8).reshape(-1, 8), np.repeat(rows, keep.sum(axis=1))


def _range(index_codes: np.ndarray, query_codes: np.ndarray, max_bits: int):
    """(query position, index position, bits) of every pair at most MAX_BITS apart: faiss, exact."""
    import faiss

    index = faiss.IndexBinaryFlat(BITS)
    index.add(index_codes)
    limits, bits, found = index.range_search(query_codes, max_bits + 1)  # faiss keeps bits < radius
    return np.repeat(np.arange(len(query_codes)), np.diff(limits).astype(np.int64)), found, bits


def match_hashes(query: np.ndarray, reference: np.ndarray | None, max_bits: int, k: int,
                 query_ok: np.ndarray | None = None, ref_ok: np.ndarray | None = None,
                 chunk: int = 4096) -> Matches:
    """Pairs of rows at most MAX_BITS apart (measure: bits, the least over the views; score:
    1 - bits/64), at most K a query row, best first. REFERENCE None: duplicates within QUERY, each
    pair once with query_index < ref_index. Rows not OK (default: rows of zeros, as hash_images
    leaves failures) match nothing. Exact: every pair is compared, CHUNK query rows at a time."""
    dedup = reference is None
    reference = query if dedup else reference
    q_ok = np.asarray(query_ok, bool) if query_ok is not None else query.any(axis=1)
    r_ok = q_ok if dedup else (np.asarray(ref_ok, bool) if ref_ok is not None else reference.any(axis=1))
    ref_rows = np.flatnonzero(r_ok)
    if not len(ref_rows) or not q_ok.any() or k < 1:
        return Matches.empty()
    ref_views, ref_view_row = _distinct_views(reference, ref_rows)
    ref_whole = np.ascontiguousarray(reference[ref_rows, 0]).view(np.uint8).reshape(-1, 8)
    found = Matches.empty()
    q_rows = np.flatnonzero(q_ok)
    for start in range(0, len(q_rows), chunk):
        rows = q_rows[start:start + chunk]
        whole = np.ascontiguousarray(query[rows, 0]).view(np.uint8).reshape(-1, 8)
        q, r, bits = _range(ref_views, whole, max_bits)  # the whole query against every reference view
        pairs_q, pairs_r, pairs_bits = [rows[q]], [ref_view_row[r]], [bits]
        views, view_row = _distinct_views(query, rows)
        q, r, bits = _range(ref_whole, views, max_bits)  # every query view against the whole reference
        pairs_q.append(view_row[q]), pairs_r.append(ref_rows[r]), pairs_bits.append(bits)
        qi, ri, b = (np.concatenate(a) for a in (pairs_q, pairs_r, pairs_bits))
        if dedup:  # both directions were compared from the lower row: keep the pair there only
            keep = qi < ri
            qi, ri, b = qi[keep], ri[keep], b[keep]
        order = np.lexsort((b, ri, qi))  # per pair, the fewest bits first
        qi, ri, b = qi[order], ri[order], b[order]
        first = np.ones(len(qi), bool)
        first[1:] = (qi[1:] != qi[:-1]) | (ri[1:] != ri[:-1])
        bits = b[first].astype(np.float64)
        found = found.concat(Matches.of(qi[first], ri[first], bits, 1.0 - bits / BITS).best_k(k))
    return found
