"""Every tier over signed rows: the input against itself (dedup) or against each reference
(contamination), gathered into one matches table (schemas/clean.py: MATCHES_SCHEMA), at most
`max_matches` a row, best first.

Captions are compared within one language, and in dedup never two captions of one image. In dedup
each pair is one row, `id` the later of the two ids and `match_id` the earlier: the row that would
be refused names the one that is kept. The cross-lingual embedding tier is contamination's alone
(a German caption that translates an English training caption).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.schemas.clean import MATCHES_SCHEMA

from .pairs import Matches
from .params import CleanParams
from .references import Reference

UNITS = {"image_hash": "hamming_bits", "image_embedding": "cosine", "text_embedding": "cosine",
         "exact_text": "normalised_equal", "minhash": "jaccard"}


def thresholds(params: CleanParams) -> dict[str, float]:
    return {"image_hash": params.max_hash_bits, "image_embedding": params.min_cosine,
            "text_embedding": params.min_cosine, "exact_text": 1.0, "minhash": params.min_jaccard}


def _matrix(table: pa.Table, column: str, dtype) -> np.ndarray:
    values = table.column(column).combine_chunks()
    width = len(values[0]) if len(values) else 0
    return values.values.to_numpy(zero_copy_only=False).astype(dtype, copy=False).reshape(len(values), width)


def _column(table: pa.Table | None, name: str) -> list | None:
    return table.column(name).to_pylist() if table is not None and name in table.column_names else None


def tier_matches(method: str, query: pa.Table, reference: pa.Table | None, params: CleanParams) -> Matches:
    """One tier over signed tables; REFERENCE None: the query against itself (captions: never two of
    one image)."""
    k = params.max_matches
    if method == "image_hash":
        from .image_hash import match_hashes

        return match_hashes(_matrix(query, "image_hashes", np.uint64),
                            None if reference is None else _matrix(reference, "image_hashes", np.uint64),
                            params.max_hash_bits, k)
    if method in ("exact_text", "minhash"):
        from .text_match import exact_matches, minhash_matches

        keys = dict(same=_column(query, "language"), ref_same=_column(reference, "language"),
                    differ=_column(query, "image_id") if reference is None else None)
        texts = (_column(query, "normalised_text"), _column(reference, "normalised_text"))
        if method == "exact_text":
            return exact_matches(*texts, k, **keys)
        return minhash_matches(*texts, k, threshold=params.min_jaccard, num_perm=params.num_perm,
                               query_sigs=_matrix(query, "minhash", np.uint32),
                               ref_sigs=None if reference is None else _matrix(reference, "minhash", np.uint32), **keys)
    from .embedding_search import search_embeddings

    q = _matrix(query, "embedding", np.float32)
    if reference is None:
        return search_embeddings(q, None, params.min_cosine, k)
    return search_embeddings(q, _matrix(reference, "embedding", np.float32), params.min_cosine, k)


# A reference larger than this is searched one index a shard of this many rows, each a task on the run's
# Dask cluster (the reference travels as paths: a worker memory-maps its own rows), results merged
# into the same K best. 1M x 1024 float16 is one IVF index of 2 GiB; build and search of it peaked at
# 3.4 GiB against 100k query rows (`./run bench clean_sets`), within a 4 GB worker.
REFERENCE_SHARD_ROWS = 1_000_000


def folder_matches(query: pa.Table, folder, params: CleanParams) -> Matches:
    """The embedding tier against a clip-retrieval folder (read part by part, never whole)."""
    from .embedding_search import search_embeddings, search_sharded

    vectors = _matrix(query, "embedding", np.float32)
    if len(folder) <= REFERENCE_SHARD_ROWS:
        return search_embeddings(vectors, folder, params.min_cosine, params.max_matches)
    from xmdata.runtime.session import current_session

    session = current_session()
    client = None if session.executor == "inprocess" else session.client()
    return search_sharded(vectors, folder, params.min_cosine, params.max_matches, REFERENCE_SHARD_ROWS,
                          client=client, threads=1 if client else None)


def as_table(found: Matches, method: str, query_ids: list[str], match_ids: list[str], source: str,
             dedup: bool) -> pa.Table:
    ids = np.asarray(query_ids, dtype=object)[found.query_index]
    others = np.asarray(match_ids, dtype=object)[found.ref_index]
    if dedup:  # one row a pair: the later id names the earlier
        later = ids > others
        ids, others = np.where(later, ids, others), np.where(later, others, ids)
    n = len(found)
    return pa.table({"id": pa.array(list(ids), pa.string()), "match_id": pa.array(list(others), pa.string()),
                     "match_source": [source] * n, "method": [method] * n,
                     "score": np.clip(found.score, 0.0, 1.0), "measure": found.measure,
                     "measure_unit": [UNITS[method]] * n}, schema=MATCHES_SCHEMA)


def best_per_row(matches: pa.Table, k: int) -> pa.Table:
    """At most K rows an id over every method and reference: best score first, then a stable order."""
    if not matches.num_rows:
        return matches
    ordered = matches.sort_by([("id", "ascending"), ("score", "descending"), ("method", "ascending"),
                               ("match_source", "ascending"), ("match_id", "ascending")])
    ids = ordered.column("id").to_pylist()
    rank, keep = 0, []
    for i, row_id in enumerate(ids):
        rank = rank + 1 if i and ids[i - 1] == row_id else 0
        keep.append(rank < k)
    return ordered.filter(pa.array(keep))


def find_matches(kind: str, query: pa.Table, references: list[tuple[Reference, pa.Table | None]],
                 params: CleanParams) -> pa.Table:
    """Dedup when REFERENCES is empty, else contamination against each."""
    ids = query.column("id").to_pylist()
    parts = [MATCHES_SCHEMA.empty_table()]
    if not references:
        for method in params.tiers(kind):
            if method != "text_embedding":
                parts.append(as_table(tier_matches(method, query, None, params), method, ids, ids, "self", True))
    for ref, signed in references:
        if ref.kind == "embeddings":
            from .clip_retrieval import open_embeddings_folder

            folder = open_embeddings_folder(ref.folder, "image" if kind == "images" else "text")
            method = "image_embedding" if kind == "images" else "text_embedding"
            parts.append(as_table(folder_matches(query, folder, params), method, ids, folder.ids.to_pylist(),
                                  ref.source, False))
            continue
        ref_ids = signed.column("id").to_pylist()
        for method in params.tiers(kind):
            parts.append(as_table(tier_matches(method, query, signed, params), method, ids, ref_ids, ref.source, False))
    return best_per_row(pa.concat_tables(parts), params.max_matches)
