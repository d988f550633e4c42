"""The clean image tier's perceptual hashes in the memo of model work (tasks/clean/signatures.py),
keyed by the sha256 of an image's bytes: a second build, or the same photo under another path, is
served from the memo; the signatures are the memo-off bytes; a bad image is never stored and is
refused the same way every time; every params field left out of the key is proven not to decide a hash."""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest
import skimage.data

from support.memo_runs import parquet_bytes, run_shard as run

from xmdata.tasks.clean.inputs import RESOLVED
from xmdata.tasks.clean.params import CleanParams
from xmdata.tasks.clean.signatures import HASH_MEMO_EXCLUDE, HASH_MEMO_KIND, signature_stage

DATA = os.path.dirname(skimage.data.__file__)
PHOTOS = ["astronaut.png", "coffee.png", "rocket.jpg"]


@pytest.fixture
def images(tmp_path) -> pa.Table:
    folder = tmp_path / "photos"
    folder.mkdir()
    for name in PHOTOS:
        shutil.copy(os.path.join(DATA, name), folder / name)
    (folder / "broken.jpg").write_bytes(open(os.path.join(DATA, "rocket.jpg"), "rb").read()[:600])  # truncated
    paths = [str(folder / n) for n in [*PHOTOS, "broken.jpg"]]
    return pa.table({"id": [f"i{k}" for k in range(len(paths))], "path": paths, RESOLVED: paths})


def stage(**changes):
    return signature_stage("images", CleanParams(**changes), None)


def test_hashes_are_served_by_content_and_give_the_memo_off_bytes(images, tmp_path):
    off_kept, off_rejects, counts = run(stage(), images, None)
    assert counts == {} and off_rejects.column("reason").to_pylist() == ["unreadable_image"]
    location = str(tmp_path / "memo")
    kept, rejects, first = run(stage(), images, location)
    assert first == {HASH_MEMO_KIND: {"computed": 4, "stored": 3}}  # the truncated one is never stored
    assert parquet_bytes(kept) == parquet_bytes(off_kept) and parquet_bytes(rejects) == parquet_bytes(off_rejects)
    kept, rejects, second = run(stage(), images, location)
    assert second == {HASH_MEMO_KIND: {"served": 3, "computed": 1}}  # the broken file, refused again
    assert parquet_bytes(kept) == parquet_bytes(off_kept) and parquet_bytes(rejects) == parquet_bytes(off_rejects)

    elsewhere = tmp_path / "moved.png"  # the same bytes under another path and id: served
    shutil.copy(images.column("path")[0].as_py(), elsewhere)
    moved = pa.table({"id": ["other"], "path": [str(elsewhere)], RESOLVED: [str(elsewhere)]})
    assert run(stage(), moved, location)[2] == {HASH_MEMO_KIND: {"served": 1}}


def test_the_fields_left_out_of_the_key_do_not_decide_a_hash_and_the_pixel_limit_does(images, tmp_path, tiny_models):
    assert set(HASH_MEMO_EXCLUDE) == {"kind", "text_signatures", "num_perm", "model"}
    location = str(tmp_path / "memo")
    base, _, _ = run(stage(), images, location)
    # kind: the hashes are made for "images" only. The embedding model adds a column of its own.
    with_model = signature_stage("images", CleanParams(), tiny_models["open_clip"])
    for changes, changed in [({"num_perm": 64}, stage(num_perm=64)),
                             ({"exact_text": False, "minhash": False}, stage(exact_text=False, minhash=False)),
                             ({"model": "tiny open_clip"}, with_model)]:
        kept, _, counts = run(changed, images, location)
        assert counts[HASH_MEMO_KIND].get("served") == 3, changes
        assert parquet_bytes(kept.select(["id", "image_hashes"])) == parquet_bytes(base.select(["id", "image_hashes"]))
    _, _, limited = run(stage(max_image_pixels=10_000_000), images, location)
    assert limited[HASH_MEMO_KIND].get("served", 0) == 0  # another limit: another key
