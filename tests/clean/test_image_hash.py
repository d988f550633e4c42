"""The model-free image tier on real photographs that scikit-image ships (no download): copies that
were resized, re-encoded, brightened, darkened and cropped are found, unrelated photos are not, and
bad files come back as errors, never as exceptions."""
from __future__ import annotations

import io
import os

import numpy as np
import pytest
import skimage.data
from PIL import Image, ImageEnhance

from xmdata.tasks.clean.image_hash import BITS, DEFAULT_MAX_BITS, VIEWS, hash_images, match_hashes

DATA = os.path.dirname(skimage.data.__file__)
PHOTOS = ["astronaut.png", "coffee.png", "chelsea.png", "rocket.jpg", "camera.png", "coins.png", "moon.png",
          "motorcycle_left.png"]
MAX_PIXELS = 50_000_000


def encoded(image: Image.Image, fmt: str = "PNG", **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **options)
    return out.getvalue()


def cut(image: Image.Image, left: float, top: float, right: float, bottom: float) -> Image.Image:
    w, h = image.size
    return image.crop((round(left * w), round(top * h), w - round(right * w), h - round(bottom * h)))


def copies(image: Image.Image) -> dict[str, bytes]:
    half = image.resize((image.width // 2, image.height // 2), Image.LANCZOS)
    all_four = ImageEnhance.Brightness(cut(image, 0.04, 0.05, 0.01, 0.03).resize(half.size)).enhance(0.88)
    return {"resize 50 %": encoded(half), "JPEG q55": encoded(image, "JPEG", quality=55),
            "brightness +12 %": encoded(ImageEnhance.Brightness(image).enhance(1.12)),
            "brightness -12 %": encoded(ImageEnhance.Brightness(image).enhance(0.88)),
            "crop 5 % left and top": encoded(cut(image, 0.05, 0.05, 0, 0)),
            "crop 5 % every side": encoded(cut(image, 0.05, 0.05, 0.05, 0.05)),
            "crop, resize, darken, JPEG q58": encoded(all_four, "JPEG", quality=58)}


@pytest.fixture(scope="module")
def photos() -> list[Image.Image]:
    return [Image.open(os.path.join(DATA, name)).convert("RGB") for name in PHOTOS]


@pytest.fixture(scope="module")
def hashed_originals() -> np.ndarray:
    hashes, errors = hash_images([os.path.join(DATA, name) for name in PHOTOS], MAX_PIXELS)
    assert errors == [None] * len(PHOTOS)
    return hashes


def test_every_transformed_copy_is_found_and_nothing_else(photos, hashed_originals):
    made = [(row, kind, data) for row, photo in enumerate(photos[:4]) for kind, data in copies(photo).items()]
    hashes, errors = hash_images([data for _, _, data in made], MAX_PIXELS)
    assert hashes.shape == (len(made), VIEWS) and errors == [None] * len(made)
    found = match_hashes(hashes, hashed_originals, DEFAULT_MAX_BITS, k=10)
    pairs = set(zip(found.query_index.tolist(), found.ref_index.tolist()))
    missed = [(PHOTOS[row], kind) for i, (row, kind, _) in enumerate(made) if (i, row) not in pairs]
    wrong = [(PHOTOS[made[q][0]], made[q][1], PHOTOS[r]) for q, r in pairs if r != made[q][0]]
    assert missed == [] and wrong == []
    assert np.all(found.measure <= DEFAULT_MAX_BITS)
    assert np.allclose(found.score, 1 - found.measure / BITS)


def test_the_whole_view_alone_misses_crops_the_views_find(photos, hashed_originals):
    """Why the views: whole image against whole image, a 5 % crop lies past the threshold."""
    cropped = [encoded(cut(photo, 0.05, 0.05, 0.05, 0.05)) for photo in photos]
    hashes, _ = hash_images(cropped, MAX_PIXELS)
    whole = np.array([bin(int(a) ^ int(b)).count("1") for a, b in zip(hashes[:, 0], hashed_originals[:, 0])])
    assert (whole > DEFAULT_MAX_BITS).any()
    found = match_hashes(hashes, hashed_originals, DEFAULT_MAX_BITS, k=1)
    assert found.query_index.tolist() == found.ref_index.tolist() == list(range(len(photos)))


def test_unrelated_photos_do_not_match(hashed_originals):
    assert len(match_hashes(hashed_originals, None, DEFAULT_MAX_BITS, k=10)) == 0
    # and the bits between them are far from the threshold, not just past it
    loose = match_hashes(hashed_originals, None, 64, k=100)
    assert len(loose) == len(PHOTOS) * (len(PHOTOS) - 1) // 2
    assert loose.measure.min() > DEFAULT_MAX_BITS + 2


def test_dedup_returns_each_pair_once_and_k_limits_a_row(photos):
    astronaut = photos[0]
    rows = [encoded(photos[1]), encoded(astronaut), encoded(astronaut, "JPEG", quality=55),
            encoded(cut(astronaut, 0.03, 0, 0, 0.02)), encoded(astronaut.resize((256, 256)))]
    hashes, _ = hash_images(rows, MAX_PIXELS)
    found = match_hashes(hashes, None, DEFAULT_MAX_BITS, k=10)
    pairs = sorted(zip(found.query_index.tolist(), found.ref_index.tolist()))
    assert pairs == [(1, 2), (1, 3), (1, 4), (2, 3), (2, 4), (3, 4)]
    one = match_hashes(hashes, None, DEFAULT_MAX_BITS, k=1)
    assert one.query_index.tolist() == [1, 2, 3]
    best = {q: found.measure[found.query_index == q].min() for q in (1, 2, 3)}
    assert [best[q] for q in one.query_index.tolist()] == one.measure.tolist()


def test_bad_files_are_errors_and_match_nothing(tmp_path, photos):
    good = encoded(photos[0], "JPEG", quality=90)
    (tmp_path / "notes.jpg").write_text("not an image")
    rows = [str(tmp_path / "missing.jpg"), str(tmp_path / "notes.jpg"), good[: len(good) // 3], b"",
            good, encoded(Image.new("RGB", (4000, 3000)), "PNG"), str(tmp_path)]
    hashes, errors = hash_images(rows, max_pixels=10_000_000)
    assert [e.split(":")[0] if e else None for e in errors] == [
        "unreadable_image", "unreadable_image", "unreadable_image", "unreadable_image", None,
        "image_too_large", "unreadable_image"]
    assert not hashes[[0, 1, 2, 3, 5, 6]].any() and hashes[4].any()
    # failed rows (zeros) would match each other at 0 bits: they are left out
    found = match_hashes(hashes, None, DEFAULT_MAX_BITS, k=10)
    assert len(found) == 0
    forced = match_hashes(hashes, None, DEFAULT_MAX_BITS, k=10, query_ok=np.ones(len(rows), bool))
    assert len(forced) > 0  # the mask is what keeps them out
