"""Caption near-duplicates without a model: normalised exact match, and MinHash + LSH on character
n-grams, verified with the exact Jaccard of the pair's shingle sets.

Comparisons are restricted by per-row keys the caller passes (`same`: rows whose keys differ are
never paired, e.g. the language; `differ`: rows whose keys are equal are never paired, e.g. the
image id, so two annotators' captions of one photo are not duplicates; None in `differ` means no
constraint for that row). Without a reference (dedup) each unordered pair comes once, query < ref.

Every hash here is fixed arithmetic on Unicode code points (no Python `hash()`, which is salted),
so signatures are the same in every process and on every machine.
"""
from __future__ import annotations

import unicodedata
from typing import NamedTuple, Sequence

import numpy as np
import regex

from xmdata.tasks.clean.pairs import Matches

# Measured (`python -m bench clean_captions`) and declared once in params.py, with where each comes from.
from xmdata.tasks.clean.params import DEFAULT_MIN_JACCARD as DEFAULT_JACCARD, DEFAULT_NGRAM, DEFAULT_NUM_PERM  # noqa: E402
DEFAULT_SEED = 42

_DROP = regex.compile(r"[\p{Cf}]+")  # zero-width joiners, direction marks: gone, not spaces
_SPACE = regex.compile(r"[\p{P}\p{Cc}\p{Z}\s]+")  # punctuation, controls, separators: one space
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


def normalize_caption(text: str) -> str:
    """NFKC, casefold, punctuation and control characters to one space, format characters
    (ZWNJ, RLM) removed, whitespace collapsed and stripped. Not a string: ''."""
    if not isinstance(text, str):
        return ""
    text = unicodedata.normalize("NFKC", text).casefold()
    return _SPACE.sub(" ", _DROP.sub("", text)).strip()


# ---------------------------------------------------------------- restricting keys
def _codes(values: Sequence | None, n: int, none_unique: bool, start: int = 0) -> np.ndarray:
    """Dense int64 codes by first occurrence (deterministic); None -> a code of its own per row
    when none_unique (the `differ` rule), else None is an ordinary key."""
    if values is None:
        return np.arange(start, start + n, dtype=np.int64) if none_unique else np.zeros(n, np.int64)
    if len(values) != n:
        raise ValueError(f"a key list has {len(values)} rows, the texts {n}")
    table: dict = {}
    out = np.empty(n, np.int64)
    fresh = start + n + 1  # codes for None rows: above any key code, unique per row
    for i, v in enumerate(values):
        if v is None and none_unique:
            out[i] = fresh + i
        else:
            out[i] = table.setdefault(v, len(table))
    return out


def _side_codes(q, r, n_q: int, n_r: int, none_unique: bool) -> tuple[np.ndarray, np.ndarray | None]:
    if n_r < 0:  # dedup
        if r is not None:
            raise ValueError("no reference (dedup): pass keys for the query rows only")
        return _codes(q, n_q, none_unique), None
    if (q is None) != (r is None):
        raise ValueError("a reference is given: pass keys for both sides (same and ref_same, differ and ref_differ)")
    both = _codes(None if q is None else list(q) + list(r), n_q + n_r, none_unique)
    return both[:n_q], both[n_q:]


def _dense(*cols: np.ndarray) -> np.ndarray:
    """One int64 code per distinct tuple of the columns (rank order)."""
    order = np.lexsort(cols[::-1])
    change = np.zeros(len(order), bool)
    for c in cols:
        s = c[order]
        change[1:] |= s[1:] != s[:-1]
    codes = np.empty(len(order), np.int64)
    codes[order] = np.cumsum(change)
    return codes


def _pairs_by_key(key_q, differ_q, key_r, differ_r, k: int) -> tuple[np.ndarray, np.ndarray]:
    """Rows with equal key and different `differ` code: each query row takes at most k partners
    (the first in (differ, row) order; for dedup only partners after it, so each pair once)."""
    dedup = key_r is None
    if dedup:
        key_r, differ_r = key_q, differ_q
    order = np.lexsort((np.arange(len(key_r)), differ_r, key_r))
    ks, ds = key_r[order], differ_r[order]
    kd = _dense(key_r, differ_r)[order]
    if dedup:
        pos = np.empty(len(order), np.int64)
        pos[order] = np.arange(len(order))
        lo = np.searchsorted(kd, kd[pos], "right")  # after the row's own differ run
        hi = np.searchsorted(ks, ks[pos], "right")
        own_lo = own_hi = lo
    else:
        all_codes = _dense(np.r_[key_q, key_r], np.r_[differ_q, differ_r])
        kq, kdr = all_codes[: len(key_q)], all_codes[len(key_q):][order]
        lo, hi = np.searchsorted(ks, key_q, "left"), np.searchsorted(ks, key_q, "right")
        own_lo, own_hi = np.searchsorted(kdr, kq, "left"), np.searchsorted(kdr, kq, "right")
    qs, rs = [], []
    first = np.minimum(own_lo - lo, k)  # partners before the query's own differ run
    after = np.minimum(hi - own_hi, k - first)  # and after it
    for start, count in ((lo, first), (own_hi, after)):
        has = count > 0
        if not has.any():
            continue
        rows = np.repeat(np.flatnonzero(has), count[has])
        offs = np.arange(len(rows)) - np.repeat(np.cumsum(count[has]) - count[has], count[has])
        qs.append(rows)
        rs.append(order[start[has].repeat(count[has]) + offs])
    if not qs:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    q, r = np.concatenate(qs), np.concatenate(rs)
    if dedup:
        q, r = np.minimum(q, r), np.maximum(q, r)
    return q.astype(np.int64), r.astype(np.int64)


# ---------------------------------------------------------------- exact tier
def exact_matches(query_norm: Sequence[str], ref_norm: Sequence[str] | None, k: int, *,
                  same=None, differ=None, ref_same=None, ref_differ=None) -> Matches:
    """Pairs of equal normalised captions (measure and score 1.0); blank text never matches.
    `same`/`differ` are per-query-row keys, `ref_same`/`ref_differ` the reference's (for dedup,
    ref_norm=None, leave them None)."""
    n_q, n_r = len(query_norm), -1 if ref_norm is None else len(ref_norm)
    texts = list(query_norm) + ([] if ref_norm is None else list(ref_norm))
    table: dict = {}
    text_code = np.array([table.setdefault(t, len(table)) if t else -1 - i for i, t in enumerate(texts)],
                         np.int64)
    sq, sr = _side_codes(same, ref_same, n_q, n_r, none_unique=False)
    dq, dr = _side_codes(differ, ref_differ, n_q, n_r, none_unique=True)
    same_all = sq if sr is None else np.r_[sq, sr]
    key = _dense(same_all, text_code)
    blank = text_code < 0
    key[blank] = -1 - np.arange(len(key))[blank]  # blank rows: a key of their own, never paired
    q, r = _pairs_by_key(key[:n_q], dq, None if n_r < 0 else key[n_q:], dr, k)
    ones = np.ones(len(q))
    return Matches.of(q, r, ones, ones).best_k(k)


# ---------------------------------------------------------------- shingles and MinHash
def _mix64(h: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (uint64 arithmetic wraps the same on every platform)."""
    with np.errstate(over="ignore"):
        h = (h ^ (h >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return h ^ (h >> np.uint64(31))


def shingle_hashes(texts: Sequence[str], ngram: int, unique: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Character n-grams of each (normalised) text hashed to uint32, as CSR: values and row
    offsets (len(texts)+1). A text shorter than n is one shingle; '' has none. unique=True sorts
    each row's hashes and drops repeats (the set, for Jaccard)."""
    lengths = np.fromiter((len(t) for t in texts), np.int64, len(texts))
    padded = np.where(lengths > 0, np.maximum(lengths, ngram), 0)
    joined = "".join(t + "\0" * (ngram - len(t)) if 0 < len(t) < ngram else t for t in texts)
    cps = np.frombuffer(joined.encode("utf-32-le"), np.uint32).astype(np.uint64)
    counts = np.where(padded > 0, padded - ngram + 1, 0)
    if cps.size < ngram or counts.sum() == 0:
        return np.empty(0, np.uint32), np.zeros(len(texts) + 1, np.int64)
    h = np.zeros(cps.size - ngram + 1, np.uint64)
    with np.errstate(over="ignore"):
        for j in range(ngram):  # polynomial hash of each window, wrapping mod 2**64
            h = h * np.uint64(0x100000001B3) + cps[j: j + h.size] + np.uint64(1)
    starts = np.cumsum(padded) - padded
    take = np.repeat(starts, counts) + np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
    values = (_mix64(h[take]) >> np.uint64(32)).astype(np.uint32)
    offsets = np.r_[0, np.cumsum(counts)].astype(np.int64)
    if unique:
        row = np.repeat(np.arange(len(texts), dtype=np.uint64), counts)
        packed = np.unique((row << np.uint64(32)) | values.astype(np.uint64))
        values = (packed & np.uint64(0xFFFFFFFF)).astype(np.uint32)
        offsets = np.r_[0, np.cumsum(np.bincount((packed >> np.uint64(32)).astype(np.int64),
                                                 minlength=len(texts)))].astype(np.int64)
    return values, offsets


def _permutations(num_perm: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Multiply-add-shift hash functions ((a*x + b) mod 2**64) >> 32, a odd: a fixed generator."""
    rng = np.random.Generator(np.random.PCG64(seed))
    a = rng.integers(1, 2**63, num_perm, dtype=np.uint64) | np.uint64(1)
    return a, rng.integers(0, 2**63, num_perm, dtype=np.uint64)


def minhash_signatures(texts: Sequence[str], num_perm: int = DEFAULT_NUM_PERM, seed: int = DEFAULT_SEED,
                       ngram: int = DEFAULT_NGRAM, chunk_rows: int = 1024) -> np.ndarray:
    """(len(texts), num_perm) uint32 MinHash of each text's character n-grams; a text without
    shingles (blank) is all 0xFFFFFFFF. Small chunks and 8 permutations at a time into one reused
    buffer (~7 MB): 8x faster than whole (permutations x shingles) arrays, which page-fault."""
    a, b = _permutations(num_perm, seed)
    out = np.full((len(texts), num_perm), 0xFFFFFFFF, np.uint32)
    for lo in range(0, len(texts), chunk_rows):
        values, offsets = shingle_hashes(texts[lo: lo + chunk_rows], ngram, unique=False)
        nonempty = np.flatnonzero(np.diff(offsets) > 0)
        if not nonempty.size:
            continue
        x = values.astype(np.uint64)
        buf = np.empty((8, x.size), np.uint64)
        for p in range(0, num_perm, 8):
            part = buf[: len(a[p: p + 8])]
            with np.errstate(over="ignore"):
                np.multiply(a[p: p + 8, None], x[None, :], out=part)
                np.add(part, b[p: p + 8, None], out=part)
            low = np.minimum.reduceat(part, offsets[nonempty], axis=1)  # min of the 64-bit values;
            out[lo + nonempty, p: p + 8] = (low >> np.uint64(32)).T  # its top 32 bits = min of theirs
    return out


def lsh_bands(threshold: float, num_perm: int) -> tuple[int, int]:
    """(bands, rows) with bands*rows <= num_perm minimising missed pairs above the threshold plus
    a quarter of the candidates below it (those cost only verification: the Jaccard is exact)."""
    j = np.linspace(0, 1, 201)
    best = None
    for rows in range(1, num_perm + 1):
        bands = num_perm // rows
        p = 1 - (1 - j**rows) ** bands
        cost = np.trapz(np.where(j >= threshold, 1 - p, 0), j) + 0.25 * np.trapz(np.where(j < threshold, p, 0), j)
        if best is None or cost < best[0]:
            best = (cost, bands, rows)
    return best[1], best[2]


def band_keys(signatures: np.ndarray, bands: int, rows: int) -> np.ndarray:
    """(n, bands) uint64: one hash of each band's `rows` MinHash values."""
    sig = signatures[:, : bands * rows].astype(np.uint64).reshape(len(signatures), bands, rows)
    h = np.zeros((len(signatures), bands), np.uint64)
    with np.errstate(over="ignore"):
        for r in range(rows):
            h = _mix64(h * np.uint64(0x9E3779B97F4A7C15) + sig[:, :, r])
    return h


def jaccard_pairs(q_texts: Sequence[str], r_texts: Sequence[str], q: np.ndarray, r: np.ndarray,
                  ngram: int) -> np.ndarray:
    """Exact Jaccard of the character n-gram sets of the pairs (q[i], r[i])."""
    if not len(q):
        return np.empty(0)
    uq, qi = np.unique(q, return_inverse=True)
    ur, ri = np.unique(r, return_inverse=True)
    vq, oq = shingle_hashes([q_texts[i] for i in uq], ngram)
    vr, orr = shingle_hashes([r_texts[i] for i in ur], ngram)
    nq, nr = np.diff(oq)[qi], np.diff(orr)[ri]
    pair = np.arange(len(q), dtype=np.uint64)

    def tagged(values, offsets, which, sizes):  # (pair << 32 | shingle) for every shingle of a side
        idx = np.repeat(offsets[which], sizes) + np.arange(sizes.sum()) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        return (np.repeat(pair, sizes) << np.uint64(32)) | values[idx].astype(np.uint64)

    both = np.sort(np.r_[tagged(vq, oq, qi, nq), tagged(vr, orr, ri, nr)])
    dup = both[1:][both[1:] == both[:-1]] >> np.uint64(32)
    inter = np.bincount(dup.astype(np.int64), minlength=len(q))
    union = nq + nr - inter
    return np.where(union > 0, inter / np.maximum(union, 1), 0.0)


def minhash_matches(query_norm: Sequence[str], ref_norm: Sequence[str] | None, k: int, *,
                    threshold: float = DEFAULT_JACCARD, num_perm: int = DEFAULT_NUM_PERM,
                    ngram: int = DEFAULT_NGRAM, seed: int = DEFAULT_SEED,
                    query_sigs: np.ndarray | None = None, ref_sigs: np.ndarray | None = None,
                    same=None, differ=None, ref_same=None, ref_differ=None) -> Matches:
    """Near-duplicate captions: LSH on MinHash (per band, rows sorted by band hash and paired
    within equal runs, datatrove-style), candidates verified with the exact Jaccard of their
    character n-gram sets (measure = score = that Jaccard, kept when >= threshold). Signatures
    may be passed in (computed once with the same num_perm, seed and ngram)."""
    n_q, n_r = len(query_norm), -1 if ref_norm is None else len(ref_norm)
    if query_sigs is None:
        query_sigs = minhash_signatures(query_norm, num_perm, seed, ngram)
    if ref_norm is not None and ref_sigs is None:
        ref_sigs = minhash_signatures(ref_norm, num_perm, seed, ngram)
    bands, rows = lsh_bands(threshold, query_sigs.shape[1])
    sq, sr = _side_codes(same, ref_same, n_q, n_r, none_unique=False)
    dq, dr = _side_codes(differ, ref_differ, n_q, n_r, none_unique=True)
    blank_q = (query_sigs == 0xFFFFFFFF).all(1)  # no shingles
    blank_r = None if ref_sigs is None else (ref_sigs == 0xFFFFFFFF).all(1)
    same_all = sq if sr is None else np.r_[sq, sr]
    blank = blank_q if blank_r is None else np.r_[blank_q, blank_r]
    width, found = max(n_q, n_r, 1), []
    for band in range(bands):
        cols = slice(band * rows, (band + 1) * rows)  # one band at a time: memory ~ n * 8 bytes
        band_all = band_keys(query_sigs[:, cols], 1, rows)[:, 0]
        if ref_sigs is not None:
            band_all = np.r_[band_all, band_keys(ref_sigs[:, cols], 1, rows)[:, 0]]
        key = _dense(same_all, band_all)
        key[blank] = -1 - np.flatnonzero(blank)
        q, r = _pairs_by_key(key[:n_q], dq, None if n_r < 0 else key[n_q:], dr, k)
        found.append(q * width + r)
    packed = np.unique(np.concatenate(found)) if found else np.empty(0, np.int64)
    q, r = packed // width, packed % width
    jac = jaccard_pairs(query_norm, query_norm if ref_norm is None else ref_norm, q, r, ngram)
    keep = jac >= threshold
    return Matches.of(q[keep], r[keep], jac[keep], jac[keep]).best_k(k)
