"""Model-free image near-duplicates (tasks/clean/image_hash.py): recall, false positives and cost, in one run.

Photos: the 18 real photographs scikit-image ships in its wheel (astronaut ... text; not the drawn
ones, nor motorcycle_right, the stereo twin of motorcycle_left) and matplotlib's grace_hopper.jpg.
Unrelated images: those 19 plus the four quadrants of each photo at least 400 px a side (56 more),
every pair from two different photos. Transformed copies of each photo:

  resize 50 %         LANCZOS, saved as PNG
  JPEG q55-60         q55 and q60
  brightness +-12 %   x1.12 and x0.88
  crop 5 %, sides     5 % cut from each of the 15 non-empty sets of sides
  crop <= 5 %, random each side cut by 0-5 % (6 draws)
  all combined        random crop <= 5 %, resize 50 %, brightness +-12 %, JPEG q55-60 (6 draws)

A copy is found when it matches its photo; every copy against the 74 other images (photos and
quadrants of other photos) counts towards false positives as well. The same figures for one hash
of the whole image show what the views buy. Cost: hash_images on the photos as shipped and as JPEG;
match_hashes on random hashes (every view distinct: the worst case; faiss's exact flat search
does the same work whatever the bits), extrapolated linearly.

  ./run bench clean_images        (python -m bench clean_images)
"""
from __future__ import annotations

import io
import itertools
import os
import time

import numpy as np

from xmdata.tasks.clean.image_hash import DEFAULT_MAX_BITS, VIEWS, hash_images, match_hashes

SKIMAGE_PHOTOS = ["astronaut.png", "brick.png", "camera.png", "cell.png", "chelsea.png", "clock_motion.png",
                  "coffee.png", "coins.png", "grass.png", "gravel.png", "hubble_deep_field.jpg", "ihc.png",
                  "moon.png", "motorcycle_left.png", "page.png", "retina.jpg", "rocket.jpg", "text.png"]
THRESHOLDS = (4, 6, 8, 10, 12, 14)
MAX_PIXELS = 100_000_000


def photo_paths() -> list[str]:
    import matplotlib
    import skimage.data

    data = os.path.dirname(skimage.data.__file__)
    return [os.path.join(data, name) for name in SKIMAGE_PHOTOS] + [
        os.path.join(os.path.dirname(matplotlib.__file__), "mpl-data", "sample_data", "grace_hopper.jpg")]


def encoded(image, fmt="PNG", **options) -> bytes:
    out = io.BytesIO()
    image.save(out, fmt, **({"compress_level": 1} if fmt == "PNG" else {}) | options)
    return out.getvalue()


def transformed(image, rng) -> dict[str, list[bytes]]:
    from PIL import Image, ImageEnhance

    def cut(im, left, top, right, bottom):
        w, h = im.size
        return im.crop((round(left * w), round(top * h), w - round(right * w), h - round(bottom * h)))

    def half(im):
        return im.resize((max(1, im.width // 2), max(1, im.height // 2)), Image.LANCZOS)

    def combined():
        im = ImageEnhance.Brightness(half(cut(image, *rng.uniform(0, 0.05, 4)))).enhance(rng.choice([0.88, 1.12]))
        return encoded(im, "JPEG", quality=int(rng.integers(55, 61)))

    return {"resize 50 %": [encoded(half(image))],
            "JPEG q55-60": [encoded(image, "JPEG", quality=q) for q in (55, 60)],
            "brightness +-12 %": [encoded(ImageEnhance.Brightness(image).enhance(f)) for f in (1.12, 0.88)],
            "crop 5 %, sides": [encoded(cut(image, *sides)) for sides in itertools.product((0, 0.05), repeat=4)
                                if any(sides)],
            "crop <= 5 %, random": [encoded(cut(image, *rng.uniform(0, 0.05, 4))) for _ in range(6)],
            "all combined": [combined() for _ in range(6)]}


def bits_table(query, reference, dedup: bool) -> np.ndarray:
    """Bits between every query row and every reference row (the least over the views); -1 unpaired."""
    found = match_hashes(query, None if dedup else reference, 64, k=len(reference))
    table = np.full((len(query), len(reference)), -1)
    table[found.query_index, found.ref_index] = found.measure
    return table


def main() -> None:
    from PIL import Image

    rng = np.random.default_rng(0)
    paths = photo_paths()
    photos = [Image.open(p).convert("RGB") for p in paths]
    names = [os.path.basename(p).rsplit(".", 1)[0] for p in paths]
    images, owner = list(photos), list(range(len(photos)))
    for i, photo in enumerate(photos):
        w, h = photo.size
        if min(w, h) >= 400:
            images += [photo.crop((x * w // 2, y * h // 2, (x + 1) * w // 2, (y + 1) * h // 2))
                       for x in (0, 1) for y in (0, 1)]
            owner += [i] * 4
    owner = np.array(owner)
    copies = [(i, kind, data) for i, photo in enumerate(photos) for kind, lst in transformed(photo, rng).items()
              for data in lst]
    base, errors = hash_images([encoded(im) for im in images], MAX_PIXELS)
    made, copy_errors = hash_images([data for _, _, data in copies], MAX_PIXELS)
    assert not any(errors) and not any(copy_errors)
    unrelated_pairs = owner[:, None] != owner[None, :]
    kinds = list(dict.fromkeys(kind for _, kind, _ in copies))
    copy_owner = np.array([i for i, _, _ in copies])
    print(f"{len(photos)} real photos, {len(images) - len(photos)} quadrants, {len(copies)} transformed copies; "
          f"{VIEWS} views an image; default max bits {DEFAULT_MAX_BITS}")
    for label, views in ((f"{VIEWS} views", slice(None)), ("whole image only", slice(0, 1))):
        among = bits_table(base[:, views], base[:, views], dedup=True)
        among = among[np.triu(unrelated_pairs, 1)]
        against = bits_table(made[:, views], base[:, views], dedup=False)
        own = against[np.arange(len(copies)), copy_owner]
        cross = against[owner[None, :] != copy_owner[:, None]]
        print(f"-- {label}: bits a copy lies from its photo (found at <= max bits), by transform")
        print("   transform            copies  " + "  ".join(f"<={t:<3d}" for t in THRESHOLDS) + "  worst  missed at default")
        for kind in kinds + ["every copy"]:
            rows = np.array([k == kind or kind == "every copy" for _, k, _ in copies])
            missed = sorted({names[i] for (i, k, _), b in zip(copies, own)
                             if (kind == "every copy" or k == kind) and b > DEFAULT_MAX_BITS})
            print(f"   {kind:20s} {rows.sum():6d}  " + "  ".join(f"{np.mean(own[rows] <= t):5.1%}" for t in THRESHOLDS)
                  + f"  {own[rows].max():5.0f}  {', '.join(missed) or '-'}")
        print(f"   false positives: {len(among)} unrelated pairs (photos, quadrants of others), "
              f"{len(cross)} copy-vs-other-image pairs; nearest {among.min():.0f} and {cross.min():.0f} bits")
        print("   pairs at <= bits     " + "  ".join(f"<={t:<3d}" for t in THRESHOLDS))
        print("   unrelated            " + "  ".join(f"{np.sum(among <= t):5d}" for t in THRESHOLDS))
        print("   copy vs other        " + "  ".join(f"{np.sum(cross <= t):5d}" for t in THRESHOLDS))
    bench_cost(paths, photos)


def bench_cost(paths: list[str], photos) -> None:
    as_jpeg = [encoded(p, "JPEG", quality=90) for p in photos]
    pixels = np.mean([p.width * p.height for p in photos]) / 1e6
    for label, sources in (("as shipped (PNG, JPEG)", paths), ("as JPEG q90", as_jpeg)):
        started = time.perf_counter()
        for _ in range(3):
            hash_images(sources, MAX_PIXELS)
        seconds = (time.perf_counter() - started) / (3 * len(sources))
        print(f"hash_images, photos {label} (mean {pixels:.2f} Mpx): {seconds * 1000:.1f} s per 1,000 images")
    rng = np.random.default_rng(1)
    queries, refs = 1_000, 20_000
    query = rng.integers(1, 2**63, (queries, VIEWS), dtype=np.int64).astype(np.uint64)
    reference = rng.integers(1, 2**63, (refs, VIEWS), dtype=np.int64).astype(np.uint64)
    started = time.perf_counter()
    match_hashes(query, reference, DEFAULT_MAX_BITS, k=10)
    seconds = time.perf_counter() - started
    per = seconds * 100_000 / refs
    print(f"match_hashes, {queries:,} x {refs:,} rows (random hashes, {VIEWS} distinct views): {seconds:.1f} s "
          f"= {per:.1f} s per 1,000 query rows against 100,000 (linear: 10k x 100k ~ {10 * per / 60:.1f} min, "
          f"dedup of 100k ~ {50 * per / 60:.0f} min) on {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
