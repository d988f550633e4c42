"""The embedding tier's search: near-copies by cosine between unit vectors, with faiss.

measure = cosine (inner product of L2-normalised vectors); score = clip(cosine, 0, 1), so an identical
vector scores 1 and the kept range [min_cosine, 1] maps onto itself (no rescaling to explain).

A row's matches are its k best reference rows, kept when cosine >= min_cosine (a k-nearest search
cut at the threshold: memory is query rows x k, however many copies a popular image has).
- Below `ivf_min_rows` reference rows: exact search, the reference streamed chunk by chunk through
  faiss.knn and merged in a faiss.ResultHeap — nothing but one chunk held, any reference size.
- From `ivf_min_rows` on: one IndexIVFScalarQuantizer (inner product, float16 storage: 2 GiB at
  1,000,000 x 1024, where float32 alone would be 4 GiB), its coarse quantizer trained on a seeded
  sample of the reference, so the same inputs give the same index and the same pairs. A float16
  reference (clip-retrieval's) is stored exactly, so its cosines equal the exact search's.
- Dedup (reference None): the input against itself; self pairs dropped, each unordered pair once
  with query_index < ref_index, at most k a row.
- search_sharded: one index per reference shard (a Dask task each, or in turn), results merged;
  the merge returns what one index returns (each shard's k best contain the union's k best).
"""
from __future__ import annotations

import math
from functools import reduce
from typing import Sequence

import numpy as np

from xmdata.tasks.clean.clip_retrieval import DEFAULT_CHUNK_ROWS, EmbeddingsFolder, check_unit_rows
from xmdata.tasks.clean.pairs import Matches

from xmdata.tasks.clean.params import DEFAULT_MIN_COSINE  # noqa: F401  (where it comes from: params.py)
# Reference rows from which the IVF index beats the exact search (build + search), measured with
# `python -m bench clean_sets` (crossover: input rows = reference rows / 10, dimension 1024, 2 shared
# cores): IVF 1.85x faster at 50,000 and 3.5x at 100,000; at 20,000-40,000 it won only on a quiet
# machine (0.5x-1.3x), so the exact search keeps that range.
DEFAULT_IVF_MIN_ROWS = 50_000
# Inverted lists probed a query: the smallest value giving recall >= 0.99 of the planted pairs
# (cosine 0.945-0.99; the exact search finds them all) at 1,000,000 x 1024 with 1,024 lists:
# 4: 0.914, 8: 0.974, 16: 0.996, 32: 0.999, 64: 1.0 (`python -m bench clean_sets`, random vectors:
# the hard case for IVF).
DEFAULT_NPROBE = 16
TRAIN_ROWS_PER_LIST = 40  # faiss warns below 39 training points a centroid
TRAIN_SEED = 1234


def list_count(rows: int) -> int:
    """Inverted lists for a reference: sqrt(rows) rounded to a power of two (1,024 at 1,000,000),
    at most one a TRAIN_ROWS_PER_LIST rows (a small reference: fewer, fuller lists)."""
    return max(1, min(int(2 ** round(math.log2(max(math.sqrt(rows), 1)))), rows // TRAIN_ROWS_PER_LIST))


class _Rows:
    """Rows [start, stop) of an in-memory matrix or a clip-retrieval folder, read in chunks."""

    def __init__(self, reference, start: int = 0, stop: int | None = None):
        if isinstance(reference, EmbeddingsFolder):
            self.folder, self.matrix, self.dim = reference, None, reference.dim
        else:
            self.folder, self.matrix = None, _as_matrix(reference)
            self.dim = self.matrix.shape[1]
        total = len(reference) if self.folder is not None else len(self.matrix)
        self.start, self.stop = start, total if stop is None else stop

    def __len__(self) -> int:
        return self.stop - self.start

    def chunks(self, chunk_rows: int = DEFAULT_CHUNK_ROWS):
        if self.folder is not None:
            yield from self.folder.chunks(chunk_rows, self.start, self.stop)
            return
        for a in range(self.start, self.stop, chunk_rows):
            block = np.ascontiguousarray(self.matrix[a:min(a + chunk_rows, self.stop)], np.float32)
            check_unit_rows(block, "reference", a)
            yield a, block

    def gather(self, rows: np.ndarray) -> np.ndarray:
        if self.folder is not None:
            return self.folder.gather(rows)
        return np.ascontiguousarray(self.matrix[rows], np.float32)


def _as_matrix(reference) -> np.ndarray:
    if isinstance(reference, np.ndarray):
        return reference
    pieces = sorted(reference, key=lambda piece: piece[0])  # (offset, chunk) pairs, contiguous
    if any(offset != sum(len(c) for _, c in pieces[:i]) for i, (offset, _) in enumerate(pieces)):
        raise ValueError("reference chunks must cover rows 0..n-1 without gaps or overlaps")
    return np.concatenate([c for _, c in pieces])


def uses_ivf(reference_rows: int, query_rows: int, ivf_min_rows: int) -> bool:
    """IVF from ivf_min_rows reference rows on (measured), and only for at least as many query rows
    as lists: below that, the exact search of every query costs less than assigning every reference
    row to a list (both are BLAS inner products: query rows vs list count, per reference row)."""
    return reference_rows >= ivf_min_rows and query_rows >= list_count(reference_rows)


def build_ivf(reference, start: int = 0, stop: int | None = None):
    """An IndexIVFScalarQuantizer (inner product, float16 storage) over reference rows [start, stop),
    trained on a seeded sample of them; its ids are row - start. The reference is read chunk by chunk."""
    import faiss

    rows = _Rows(reference, start, stop)
    nlist = list_count(len(rows))
    sample = np.sort(np.random.default_rng(TRAIN_SEED).choice(
        len(rows), min(len(rows), TRAIN_ROWS_PER_LIST * nlist), replace=False)) + rows.start
    index = faiss.IndexIVFScalarQuantizer(faiss.IndexFlatIP(rows.dim), rows.dim, nlist,
                                          faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    index.by_residual = False  # float16 of the vector itself: exact for a float16 reference
    index.cp.seed = TRAIN_SEED
    index.train(rows.gather(sample))
    for _, block in rows.chunks():
        index.add(block)
    return index


def search_ivf(index, query: np.ndarray, kk: int, nprobe: int) -> tuple[np.ndarray, np.ndarray]:
    """(cosines, ids), each (query rows, kk), best first; id -1 where fewer than kk were found."""
    index.nprobe = nprobe
    # by list: at least as many queries as lists, and more probes than lists (faiss's bucket sort)
    by_list = len(query) >= index.nlist and len(query) * nprobe > index.nlist + 1
    return _search_by_list(index, query, kk) if by_list else index.search(query, kk)


def _nearest(query: np.ndarray, rows: _Rows, kk: int, min_cosine: float, nprobe: int,
             ivf_min_rows: int) -> Matches:
    """Each query row's kk best rows of `rows` (global row numbers), cut at min_cosine."""
    import faiss

    if uses_ivf(len(rows), len(query), ivf_min_rows):
        index = build_ivf(rows.folder if rows.folder is not None else rows.matrix, rows.start, rows.stop)
        cosine, ref = search_ivf(index, query, kk, nprobe)
        ref = np.where(ref >= 0, ref + rows.start, -1)
    else:
        heap = faiss.ResultHeap(len(query), kk, keep_max=True)
        for offset, block in rows.chunks():
            cosine, found = faiss.knn(query, block, min(kk, len(block)), metric=faiss.METRIC_INNER_PRODUCT)
            heap.add_result(cosine, np.where(found >= 0, found + offset, -1))
        heap.finalize()
        cosine, ref = heap.D, heap.I
    keep = (ref >= 0) & (cosine >= min_cosine)
    q = np.broadcast_to(np.arange(len(query))[:, None], ref.shape)[keep]
    return Matches.of(q, ref[keep], cosine[keep], np.clip(cosine[keep], 0, 1))


def _search_by_list(index, query: np.ndarray, kk: int) -> tuple[np.ndarray, np.ndarray]:
    """faiss's big-batch IVF search (faiss.contrib.big_batch_search): the queries bucketed by the
    lists they probe, each list decoded once and matched against its queries with BLAS (faiss.knn).
    Measured 3x faster than index.search on 10,000 queries x 100,000 rows (which scans the probed
    lists again for every query, bound by memory bandwidth); used once there are at least as many
    queries as lists. Its sequential loop is spelled out to leave out its progress lines."""
    from faiss.contrib.big_batch_search import BigBatchSearcher, BlockComputer

    searcher = BigBatchSearcher(index, query, kk)
    blocks = BlockComputer(index, method="knn_function")
    # QT_fp16 codes are IEEE halves: numpy's cast equals sq.decode, measured 1.8x faster (200,000 x 1024)
    searcher.decode_func, searcher.by_residual = lambda codes: codes.view(np.float16).astype(np.float32), False
    searcher.coarse_quantization()
    searcher.reorder_assign()
    for inverted_list in range(index.nlist):
        rows, vectors, ids, codes = searcher.prepare_bucket(inverted_list)
        cosine, found = blocks.block_search(vectors, codes, ids, min(kk, len(ids)))
        searcher.add_results_to_heap(rows, cosine, ids, found)
    searcher.rh.finalize()
    return searcher.rh.D, searcher.rh.I


def _finish(found: Matches, k: int, dedup: bool) -> Matches:
    if not dedup:
        return found.best_k(k)
    found = Matches(*(a[found.query_index != found.ref_index] for a in found)).best_k(k)
    low, high = np.minimum(found.query_index, found.ref_index), np.maximum(found.query_index, found.ref_index)
    _, first = np.unique(low * (high.max(initial=0) + 1) + high, return_index=True)
    return Matches.of(low[first], high[first], found.measure[first], found.score[first]).best_k(k)


def _check_query(query: np.ndarray, dim: int) -> np.ndarray:
    query = np.ascontiguousarray(query, np.float32)
    if query.ndim != 2 or query.shape[1] != dim:
        raise ValueError(f"query vectors have shape {query.shape}, expected (n, {dim})")
    check_unit_rows(query, "query", 0)
    return query


def _with_threads(threads: int | None, work):
    import faiss

    before = faiss.omp_get_max_threads()
    if threads:
        faiss.omp_set_num_threads(threads)
    try:
        return work()
    finally:
        faiss.omp_set_num_threads(before)


def search_embeddings(query: np.ndarray, reference, min_cosine: float, k: int, *,
                      nprobe: int = DEFAULT_NPROBE, ivf_min_rows: int = DEFAULT_IVF_MIN_ROWS,
                      threads: int | None = None) -> Matches:
    """Matches of `query` (n, d) unit vectors against `reference` — an (m, d) array, a sequence of
    (offset, chunk) pairs, or an EmbeddingsFolder — or, with reference None, against itself (dedup).
    threads: faiss's OpenMP threads for this call (None: faiss's default, every core)."""
    if k < 1:
        raise ValueError("k must be at least 1")
    dedup = reference is None
    rows = _Rows(query if dedup else reference)
    query = _check_query(query, rows.dim)
    if not len(query) or not len(rows):
        return Matches.empty()
    kk = k + 1 if dedup else k
    return _with_threads(threads, lambda: _finish(_nearest(query, rows, kk, min_cosine, nprobe, ivf_min_rows),
                                                  k, dedup))


def _search_shard(query, reference, start, stop, kk, min_cosine, nprobe, ivf_min_rows, threads) -> Matches:
    return _with_threads(threads, lambda: _nearest(query, _Rows(reference, start, stop), kk, min_cosine,
                                                   nprobe, ivf_min_rows))


def search_sharded(query: np.ndarray, reference, min_cosine: float, k: int, shard_rows: int, *,
                   client=None, nprobe: int = DEFAULT_NPROBE, ivf_min_rows: int = DEFAULT_IVF_MIN_ROWS,
                   threads: int | None = None) -> Matches:
    """search_embeddings with the reference cut into shards of shard_rows rows: one index a shard (a
    task on a Dask `client`'s workers, the query scattered once; without one, shard after shard, which
    bounds memory by a shard's index), each shard's k best kept, merged into the same k best.
    An EmbeddingsFolder travels as paths: each worker memory-maps only its shard's rows."""
    dedup = reference is None
    source = query if dedup else reference
    if isinstance(source, (list, tuple)):
        source = _as_matrix(source)
    rows = _Rows(source)
    query = _check_query(query, rows.dim)
    if not len(query) or not len(rows):
        return Matches.empty()
    kk = k + 1 if dedup else k
    shards: Sequence[tuple[int, int]] = [(a, min(a + shard_rows, len(rows))) for a in range(0, len(rows), shard_rows)]
    args = (kk, min_cosine, nprobe, ivf_min_rows, threads)
    if client is None:
        found = [_search_shard(query, source, a, b, *args) for a, b in shards]
    else:
        shared_query = client.scatter(query, broadcast=True)
        shared_source = shared_query if dedup else (source if isinstance(source, EmbeddingsFolder)
                                                    else client.scatter(source, broadcast=True))
        found = client.gather([client.submit(_search_shard, shared_query, shared_source, a, b, *args, pure=False)
                               for a, b in shards])
    return _finish(reduce(Matches.concat, found, Matches.empty()), k, dedup)
