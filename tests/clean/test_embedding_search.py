"""The embedding tier's search with planted vectors (tiny models have random weights, so the plumbing is
checked on vectors placed at known cosines): near copies found, near misses and strangers not, at
most k a row, dedup pairs once, exact and IVF agreeing, shards merged into what one index returns."""
from __future__ import annotations

import numpy as np
import pytest

from xmdata.schemas import ContractError
from xmdata.tasks.clean.clip_retrieval import open_embeddings_folder, write_embeddings_part
from xmdata.tasks.clean.embedding_search import list_count, search_embeddings, search_sharded

DIM, MIN_COSINE = 32, 0.94
EXACT, IVF = dict(ivf_min_rows=10**9), dict(ivf_min_rows=0)


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


def at_cosine(rows: np.ndarray, cosine, rng) -> np.ndarray:
    """Unit vectors at exactly `cosine` from each row."""
    rows = rows.astype(np.float32)
    noise = rng.standard_normal(rows.shape)
    noise = unit(noise - (noise * rows).sum(1, keepdims=True) * rows)
    cosine = np.broadcast_to(np.asarray(cosine, np.float32), len(rows))[:, None]
    return unit(cosine * rows + np.sqrt(1 - cosine ** 2) * noise)


@pytest.fixture(scope="module")
def planted():
    """3,000 float16 reference rows; 300 input rows: 0-99 near copies of reference rows (0.95-0.99),
    100-199 near misses (0.85-0.92), the rest strangers (random: cosine well under 0.94 at dim 32)."""
    rng = np.random.default_rng(7)
    reference = unit(rng.standard_normal((3000, DIM))).astype(np.float16)
    sources = rng.choice(len(reference), 200, replace=False)
    cosines = np.r_[np.linspace(0.95, 0.99, 100), np.linspace(0.85, 0.92, 100)]
    query = unit(rng.standard_normal((300, DIM)))
    query[:200] = at_cosine(reference[sources], cosines, rng)
    return query, reference, sources[:100]


def pairs(found) -> set[tuple[int, int]]:
    return set(zip(found.query_index.tolist(), found.ref_index.tolist()))


@pytest.mark.parametrize("mode", [EXACT, IVF], ids=["exact", "ivf"])
def test_near_copies_found_others_not(planted, mode):
    query, reference, sources = planted
    found = search_embeddings(query, reference, MIN_COSINE, 5, **mode)
    assert pairs(found) == {(i, int(s)) for i, s in enumerate(sources)}
    expected = (query[found.query_index] * reference[found.ref_index].astype(np.float32)).sum(1)
    np.testing.assert_allclose(found.measure, expected, atol=1e-5)
    np.testing.assert_array_equal(found.score, np.clip(found.measure, 0, 1))
    assert found.measure.min() >= MIN_COSINE and found.query_index.dtype == np.int64


def test_exact_and_ivf_agree_and_ivf_is_reproducible(planted):
    """Every list probed, the IVF index returns the exact search's pairs, ids and cosines."""
    query, reference, _ = planted
    every_list = list_count(len(reference))
    exact = search_embeddings(query, reference, 0.5, 3, **EXACT)
    ivf = search_embeddings(query, reference, 0.5, 3, nprobe=every_list, **IVF)
    again = search_embeddings(query, reference, 0.5, 3, nprobe=every_list, **IVF)
    for a, b, c in zip(exact, ivf, again):
        np.testing.assert_allclose(a, b, atol=1e-5)  # float16 reference: stored exactly by the IVF index
        np.testing.assert_array_equal(b, c)
    for rows in (every_list, every_list - 1):  # as many query rows as lists (by list) or fewer (by query)
        one_probe = search_embeddings(query[:rows], reference, MIN_COSINE, 3, nprobe=1, ivf_min_rows=0)
        assert 0 < len(one_probe) and pairs(one_probe) <= {(i, int(s)) for i, s in enumerate(planted[2])}


def test_at_most_k_a_row_best_first():
    rng = np.random.default_rng(1)
    base = unit(rng.standard_normal((1, DIM)))
    cosines = [0.95, 0.99, 0.97, 0.96, 0.98, 0.90]
    reference = np.concatenate([at_cosine(np.repeat(base, 6, 0), cosines, rng), unit(rng.standard_normal((50, DIM)))])
    for mode in (EXACT, IVF):
        found = search_embeddings(base, reference, MIN_COSINE, 3, **mode)
        assert found.ref_index.tolist() == [1, 4, 2]  # 0.99, 0.98, 0.97
        np.testing.assert_allclose(found.measure, [0.99, 0.98, 0.97], atol=1e-3)  # IVF: float16 storage
        assert len(search_embeddings(base, reference, MIN_COSINE, 10, **mode)) == 5  # 0.90 is under the cut


def test_dedup_each_pair_once():
    rng = np.random.default_rng(2)
    rows = unit(rng.standard_normal((400, DIM)))
    rows[10] = at_cosine(rows[3:4], 0.97, rng)[0]  # 3 ~ 10
    rows[250] = rows[3]  # an exact copy: 3 = 250, 10 ~ 250
    rows[399] = at_cosine(rows[120:121], 0.95, rng)[0]
    for mode in (EXACT, IVF):
        found = search_embeddings(rows, None, MIN_COSINE, 5, **mode)
        assert sorted(pairs(found)) == [(3, 10), (3, 250), (10, 250), (120, 399)]
        assert found.measure[found.ref_index == 250][0] == pytest.approx(1.0, abs=1e-5)
        assert (found.score <= 1).all()
    one = search_embeddings(rows, None, MIN_COSINE, 1, **EXACT)  # at most one a row, counted on the lower row
    assert np.bincount(one.query_index).max() == 1 and (3, 250) in pairs(one)


@pytest.mark.parametrize("mode, cut", [(EXACT, 0.3), (IVF, MIN_COSINE)], ids=["exact", "ivf"])
def test_sharded_equals_one_index(planted, mode, cut):
    """Exact: the same k best even down to cosine 0.3 (each shard's k best hold the union's). IVF:
    the same near copies (other shards, other lists: its approximate far neighbours differ)."""
    query, reference, _ = planted
    whole = search_embeddings(query, reference, cut, 4, **mode)
    shards = search_sharded(query, reference, cut, 4, shard_rows=700, **mode)
    for a, b in zip(whole, shards):
        np.testing.assert_allclose(a, b, atol=1e-5)
    rows = np.concatenate([reference[:500].astype(np.float32), query[:100]])
    for a, b in zip(search_embeddings(rows, None, cut, 4, **mode), search_sharded(rows, None, cut, 4, shard_rows=130, **mode)):
        np.testing.assert_allclose(a, b, atol=1e-5)


def test_sharded_on_dask_workers_reading_a_folder(planted, tmp_path):
    from distributed import Client, LocalCluster

    query, reference, sources = planted
    for part in range(3):
        rows = slice(part * 1000, (part + 1) * 1000)
        write_embeddings_part(str(tmp_path), part, 3, reference[rows], {"image_path": [str(i) for i in range(3000)][rows]})
    folder = open_embeddings_folder(str(tmp_path), "image", expected_dim=DIM)
    whole = search_embeddings(query, reference, MIN_COSINE, 5, **EXACT)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster, Client(cluster) as client:
        shards = search_sharded(query, folder, MIN_COSINE, 5, shard_rows=800, client=client, threads=1, **EXACT)
    for a, b in zip(whole, shards):
        np.testing.assert_allclose(a, b, atol=1e-5)
    assert pairs(search_embeddings(query, folder, MIN_COSINE, 5, **IVF)) == {(i, int(s)) for i, s in enumerate(sources)}


def test_reference_as_chunks_and_bad_inputs(planted):
    query, reference, _ = planted
    chunks = [(1000, reference[1000:]), (0, reference[:1000])]
    assert pairs(search_embeddings(query, chunks, MIN_COSINE, 5)) == pairs(search_embeddings(query, reference, MIN_COSINE, 5))
    assert len(search_embeddings(query[:0], reference, MIN_COSINE, 5)) == 0
    with pytest.raises(ValueError, match="expected \\(n, 32\\)"):
        search_embeddings(query[:, :16], reference, MIN_COSINE, 5)
    broken = reference.copy()
    broken[5, 0] = np.nan
    with pytest.raises(ContractError, match="reference: row 5: the vector holds NaN"):
        search_embeddings(query, broken, MIN_COSINE, 5)
    with pytest.raises(ContractError, match="query: row 0: the vector is not L2-normalised"):
        search_embeddings(query * 2, reference, MIN_COSINE, 5)
