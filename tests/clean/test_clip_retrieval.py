"""The clip-retrieval embeddings reader on folders laid out as clip-retrieval's writer lays them out:
zero-padded part numbers (12 partitions: 00..11), a partition that wrote nothing (a gap), older
unpadded names (numeric order, not name order), both kinds, and every way a folder can be refused."""
from __future__ import annotations

import os
import re

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.schemas import ContractError
from xmdata.tasks.clean.clip_retrieval import open_embeddings_folder, part_name, write_embeddings_part

DIM = 16


def unit_rows(rng, n: int, dim: int = DIM, dtype=np.float16) -> np.ndarray:
    x = rng.standard_normal((n, dim)).astype(np.float32)
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(dtype)


def write_folder(path, sizes=(5, 3, 7, 4, 6, 2, 5, 3, 4, 6, 2, 3), skip=(5,), kind="image", key=True, seed=0):
    """Partitions 0..len(sizes)-1 with the writer's padding; those in `skip` wrote nothing (no rows).
    Returns the vectors and match ids in the folder's row order."""
    rng = np.random.default_rng(seed)
    vectors, ids = [], []
    for partition, rows in enumerate(sizes):
        if partition in skip:
            continue
        v = unit_rows(rng, rows)
        keys = [f"{partition:05d}{r:04d}" for r in range(rows)]
        columns = {"image_path": [f"/images/{k}.jpg" for k in keys]} if kind == "image" else {"caption": [f"text {k}" for k in keys]}
        if key:
            columns |= {"key": keys, "url": [f"https://example.com/{k}.jpg" for k in keys], "status": ["success"] * rows}
        write_embeddings_part(str(path), partition, len(sizes), v, columns, kind)
        vectors.append(v)
        ids += keys if key else columns.get("image_path", [])
    return np.concatenate(vectors), ids


def test_writer_padding_matches_clip_retrieval():
    assert [part_name(i, 9) for i in (0, 8)] == ["0", "8"]  # int(log10(9)) + 1 = 1 digit
    assert [part_name(i, 10) for i in (0, 9)] == ["00", "09"]  # 10 partitions already get 2 digits
    assert part_name(7, 1000) == "0007"


def test_reads_parts_in_order_with_a_gap(tmp_path):
    vectors, ids = write_folder(tmp_path)
    assert sorted(os.listdir(tmp_path / "img_emb"))[:2] == ["img_emb_00.npy", "img_emb_01.npy"]
    assert not (tmp_path / "img_emb" / "img_emb_05.npy").exists()
    folder = open_embeddings_folder(str(tmp_path), "image", expected_dim=DIM)
    assert (folder.rows, folder.dim, folder.dtype, len(folder.parts)) == (len(vectors), DIM, np.float16, 11)
    assert folder.ids.to_pylist() == ids  # metadata `key`
    chunks = list(folder.chunks(chunk_rows=4))
    assert [offset for offset, _ in chunks][:4] == [0, 4, 5, 8]  # a chunk never crosses a part (5, 3, ...)
    np.testing.assert_array_equal(np.concatenate([c for _, c in chunks]), vectors.astype(np.float32))
    middle = np.concatenate([c for _, c in folder.chunks(chunk_rows=3, start=6, stop=20)])
    np.testing.assert_array_equal(middle, vectors[6:20].astype(np.float32))
    np.testing.assert_array_equal(folder.gather(np.array([30, 2, 17])), vectors[[30, 2, 17]].astype(np.float32))


def test_unpadded_names_are_read_in_numeric_order(tmp_path):
    vectors, ids = write_folder(tmp_path, skip=())
    for name, ext in (("img_emb", "npy"), ("metadata", "parquet")):
        for f in os.listdir(tmp_path / name):
            stem, digits = f.rsplit(".", 1)[0].rsplit("_", 1)
            os.rename(tmp_path / name / f, tmp_path / name / f"{stem}_{int(digits)}.{ext}")  # img_emb_10 sorts before img_emb_2
    folder = open_embeddings_folder(str(tmp_path), "image")
    assert folder.ids.to_pylist() == ids
    np.testing.assert_array_equal(np.concatenate([c for _, c in folder.chunks()]), vectors.astype(np.float32))


def test_text_embeddings_and_image_path_ids(tmp_path):
    write_folder(tmp_path / "text", kind="text")
    assert open_embeddings_folder(str(tmp_path / "text"), "text").ids[0].as_py() == "000000000"
    _, ids = write_folder(tmp_path / "plain", key=False)  # metadata not enabled: image_path names the rows
    assert open_embeddings_folder(str(tmp_path / "plain"), "image").ids.to_pylist() == ids


def refused(path, match: str, kind="image", expected_dim=None, read=False) -> str:
    """The one-line refusal of the folder, which holds `match`."""
    with pytest.raises(ContractError, match=re.escape(match)) as caught:
        folder = open_embeddings_folder(str(path), kind, expected_dim)
        if read:
            list(folder.chunks())
    message = str(caught.value)
    assert "\n" not in message
    return message


def test_refuses_broken_folders(tmp_path):
    (tmp_path / "empty").mkdir()
    refused(tmp_path / "empty", "neither img_emb/ nor text_emb/")
    write_folder(tmp_path / "text", sizes=(3,), skip=(), kind="text")
    assert "text_emb/" in refused(tmp_path / "text", "no img_emb/ folder")
    (tmp_path / "none" / "img_emb").mkdir(parents=True)
    refused(tmp_path / "none", "no img_emb_N.npy")

    write_folder(tmp_path / "zero", sizes=(0, 0), skip=())
    refused(tmp_path / "zero", "hold no rows")

    write_folder(tmp_path / "dim", skip=())
    refused(tmp_path / "dim", "img_emb_00.npy: dimension 16, not the model's 1024", expected_dim=1024)
    np.save(tmp_path / "dim" / "img_emb" / "img_emb_03.npy", unit_rows(np.random.default_rng(1), 4, 8))
    refused(tmp_path / "dim", "img_emb_03.npy: dimension 8, not the first part's 16")

    write_folder(tmp_path / "rows", skip=())
    meta = tmp_path / "rows" / "metadata" / "metadata_02.parquet"
    pq.write_table(pq.read_table(meta).slice(1), meta)
    assert "img_emb_02.npy has 7" in refused(tmp_path / "rows", "metadata_02.parquet: 6 rows, but")
    os.remove(meta)
    refused(tmp_path / "rows", "img_emb_02.npy: no metadata file")

    write_folder(tmp_path / "ids", sizes=(3,), skip=(), kind="text", key=False)
    refused(tmp_path / "ids", "metadata_0.parquet: no 'key' or 'image_path' column", kind="text")

    write_folder(tmp_path / "dtype", sizes=(3,), skip=())
    np.save(tmp_path / "dtype" / "img_emb" / "img_emb_0.npy", np.ones((3, DIM), np.int8))
    refused(tmp_path / "dtype", "img_emb_0.npy: expected a 2-D float16 or float32 matrix, found 2-D int8")
    (tmp_path / "dtype" / "img_emb" / "img_emb_0.npy").write_bytes(b"not numpy")
    refused(tmp_path / "dtype", "img_emb_0.npy: not a readable .npy matrix")


def test_refuses_vectors_that_are_not_finite_unit_vectors_when_read(tmp_path):
    vectors, _ = write_folder(tmp_path, sizes=(4, 5), skip=())
    broken = vectors[4:].copy()
    broken[2, 3] = np.nan
    np.save(tmp_path / "img_emb" / "img_emb_1.npy", broken)
    refused(tmp_path, "img_emb_1.npy: row 2: the vector holds NaN", read=True)
    broken[2] = vectors[6] * 2
    np.save(tmp_path / "img_emb" / "img_emb_1.npy", broken)
    refused(tmp_path, "img_emb_1.npy: row 2: the vector is not L2-normalised (norm 1.99", read=True)
    broken[2] = 0  # clip-retrieval's normalized() leaves a zero vector at zero: read, matches nothing
    np.save(tmp_path / "img_emb" / "img_emb_1.npy", broken)
    assert sum(len(c) for _, c in open_embeddings_folder(str(tmp_path), "image").chunks()) == 9
    pq.write_table(pa.table({"key": ["a"]}), tmp_path / "metadata" / "metadata_7.parquet")  # no npy: ignored
    assert open_embeddings_folder(str(tmp_path), "image").rows == 9
