"""VICR, the Validated Image Caption Rating dataset (Narins et al., NeurIPS 2023 Datasets and Benchmarks):
68,217 ratings (1-5) of 15,646 image–caption pairs over 9,990 images (8,990 COCO val2014, 1,000 Flickr8k),
split by image into train, val and test (3,161 pairs).

Layout read (the one public copy of the rows seen: a 250-row sample of the release, hil-se/
comparative_image_caption@21b175f data/VICR_Sample250.csv): one CSV with a header `image, caption,
subset, num_ratings, ratings, rating_2, …, rating_<n>`; `image` is the image's URL (COCO's
images.cocodataset.org/val2014/COCO_val2014_*.jpg; a Flickr8k file name on validatedicr.org, a host that
no longer resolves), `subset` the split, `num_ratings` how many of the rating cells that follow are filled
(the rest empty). Traps kept in the fixtures: an image with two captions, a caption shared by two images,
captions quoted for their commas and ending in spaces (kept as published), a row whose count and cells
disagree (refused). One row per pair; `image_path` is `val2014/<file>` or `Flicker8k_Dataset/<file>`,
the folders of COCO's and Flickr8k's own archives, so both unpacked under one --images folder resolve."""
from __future__ import annotations

import csv
import os
import re
from collections import Counter

from xmdata.schemas.contract import ContractError
from xmdata.schemas.ratings import RATED_PAIRS, SPLITS

from .base import Imported, Published, drop_missing_images, files_in, layout_error, reject, rows_table
from .options import ImportOptions

FORMAT = "vicr"
EXPECTED = "a CSV with header image, caption, subset, num_ratings, ratings[, rating_2, …]"
HEADER = ("image", "caption", "subset", "num_ratings", "ratings")
RATING_RANGE = (1, 5)
FLICKR8K_FILE = re.compile(r"^\d+_[0-9a-f]+\.jpg$")
FOLDERS = {"coco": "val2014", "flickr8k": "Flicker8k_Dataset"}  # as COCO's and Flickr8k's archives unpack
COUNTS = Published(
    "the VICR paper (Narins et al., 2023: 15,646 pairs, 68,217 ratings, 9,990 images) and the multilingual "
    "CLIPScore paper (Gomes et al., 2025, Appendix C: the test split's 3,161 pairs); the train and val pairs and "
    "each split's images as hil-se/comparative_image_caption@9507056 manifests/vicr_official.summary.json counts "
    "the authors' serialized splits",
    {"pairs": 15646, "ratings": 68217, "images": 9990, "pairs/train": 10175, "pairs/val": 2310, "pairs/test": 3161,
     "images/train": 6488, "images/val": 1502, "images/test": 2000})


def corpus_of(url: str) -> tuple[str, str] | None:
    """(corpus, file name) of an image URL, None for one of neither collection."""
    name = url.rstrip("/").rsplit("/", 1)[-1]
    if name.startswith("COCO_val2014_") and name.endswith(".jpg"):
        return "coco", name
    if FLICKR8K_FILE.match(name):
        return "flickr8k", name
    return None


def _ratings(fields: list[str], count: str) -> list[int] | str:
    """The filled rating cells as integers, or the reason the row is refused."""
    cells = [c.strip() for c in fields]
    filled = [c for c in cells if c]
    if any(cells[i] == "" and cells[i + 1] != "" for i in range(len(cells) - 1)):
        return "rating_cells_not_contiguous"
    try:
        values = [int(c) for c in filled]
        expected = int(count)
    except ValueError:
        return "rating_not_a_number"
    if expected != len(values):
        return "rating_count_mismatch"
    if not values:
        return "no_ratings"
    if any(not RATING_RANGE[0] <= v <= RATING_RANGE[1] for v in values):
        return "rating_outside_1_5"
    return values


def read_file(path: str, language: str) -> tuple[list[dict], list, int]:
    with open(path, encoding="utf-8", newline="") as handle:
        lines = list(csv.reader(handle))
    header = [c.strip() for c in lines[0]] if lines else []
    if tuple(header[:len(HEADER)]) != HEADER:
        raise layout_error(FORMAT, path, EXPECTED, 1, ",".join(header), "not this header")
    pairs, rejects, per_image = [], [], Counter()
    for number, fields in enumerate(lines[1:], start=2):
        row_id = f"{os.path.basename(path)}:{number}"
        if not any(f.strip() for f in fields):
            continue
        if len(fields) != len(header):
            rejects.append(reject(FORMAT, "malformed_row", [row_id], [",".join(fields)]))
            continue
        url, caption, split, count = fields[:4]
        source = corpus_of(url)
        if source is None:
            rejects.append(reject(FORMAT, "image_not_coco_or_flickr8k", [row_id], [url]))
            continue
        if split not in SPLITS:
            rejects.append(reject(FORMAT, "unknown_split", [row_id], [split]))
            continue
        if not caption.strip():
            rejects.append(reject(FORMAT, "empty_text", [row_id]))
            continue
        ratings = _ratings(fields[4:], count)
        if isinstance(ratings, str):
            rejects.append(reject(FORMAT, ratings, [row_id], [",".join(fields[3:])]))
            continue
        corpus, name = source
        per_image[name] += 1  # an image's captions numbered in file order: unique ids by construction
        pairs.append({"id": f"{name.rsplit('.', 1)[0]}#{per_image[name] - 1}",
                      "image_path": f"{FOLDERS[corpus]}/{name}", "text": caption, "language": language,
                      "image_id": name, "image_url": url, "corpus": corpus, "split": split,
                      "rating": sum(ratings) / len(ratings), "ratings": ratings})
    return pairs, rejects, len(lines) - 1


def read_vicr(source: str, options: ImportOptions) -> Imported:
    if options.split is not None and options.split not in SPLITS:
        raise ContractError(f"{FORMAT}: --split {options.split!r}: VICR's splits are {', '.join(SPLITS)}")
    pairs, rejects, read = [], [], 0
    paths = files_in(source, "*.csv", FORMAT, "*.csv")
    for path in paths:
        file_pairs, file_rejects, rows = read_file(path, options.language or "en")
        pairs, rejects, read = pairs + file_pairs, rejects + file_rejects, read + rows
    counts = {"pairs": len(pairs), "ratings": sum(len(p["ratings"]) for p in pairs),
              "images": len({p["image_id"] for p in pairs})}
    for split in SPLITS:
        counts[f"pairs/{split}"] = sum(p["split"] == split for p in pairs)
        counts[f"images/{split}"] = len({p["image_id"] for p in pairs if p["split"] == split})
    leaks = sorted({p["image_id"] for p in pairs if p["split"] != "train"} & {p["image_id"] for p in pairs
                                                                             if p["split"] == "train"})
    notes = {"images_in_train_and_another_split": len(leaks)}
    if options.split:  # the counts stay the file's, compared with the publisher's; the rest is not written
        notes["pairs_of_other_splits_left_out"] = sum(p["split"] != options.split for p in pairs)
        pairs = [p for p in pairs if p["split"] == options.split]
    kept, missing = drop_missing_images(pairs, options.images, FORMAT, "image_path")
    return Imported({"rated_pairs": (rows_table(kept, RATED_PAIRS.schema), RATED_PAIRS)},
                    f"VICR ratings CSV ({', '.join(os.path.basename(p) for p in paths)})", read, rejects + missing,
                    notes=notes, counts=counts, published=COUNTS)
