"""Composite (Aditya et al., 2015): Amazon Mechanical Turk result files `8k_correctness.csv`,
`30k_correctness.csv`, `coco_correctness.csv`, ';'-separated with a header; per row the image
(`Input.image_url`), its candidate captions (`Input.text1`…) and their correctness ratings 1-5
(`Answer.Q1Answer`…): 3 candidates for Flickr8K, 4 for Flickr30K and COCO. One pair per candidate,
rated as the paper does. The thoroughness files next to them (`8k_throughness.csv`, as published, or
`…_thoroughness.csv`), same layout, add a `thoroughness` column joined by image and caption. The
published files end with malformed rows: they are refused, counted."""
from __future__ import annotations

import csv
import os

from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, files_in, layout_error, reject, rows_table
from .options import ImportOptions

FORMAT = "composite"
EXPECTED = "';'-separated AMT results with Input.image_url, Input.text<i>, Answer.Q<i>Answer columns"
IMAGE_FOLDERS = {"8k": "flickr8k", "30k": "flickr30k", "coco": "coco"}  # image_path = <folder>/<file name>


def read_file(path: str, language: str) -> tuple[list[dict], list, int]:
    with open(path, encoding="utf-8", newline="") as handle:
        lines = list(csv.reader(handle, delimiter=";"))
    header = lines[0] if lines else []
    n = sum(1 for c in header if c.startswith("Input.text"))
    wanted = ["Input.image_url"] + [f"Input.text{i}" for i in range(1, n + 1)] + [
        f"Answer.Q{i}Answer" for i in range(1, n + 1)]
    if n == 0 or any(c not in header for c in wanted):
        raise layout_error(FORMAT, path, EXPECTED, 1, ";".join(header)[:160],
                           f"missing {', '.join(c for c in wanted if c not in header) or 'Input.text1'}")
    corpus = os.path.basename(path).split("_")[0]
    at = {c: header.index(c) for c in wanted}
    pairs, rejects = [], []
    for number, fields in enumerate(lines[1:], start=2):
        if len(fields) < len(header) or not fields[at["Input.image_url"]].startswith("http"):
            rejects.append(reject(FORMAT, "malformed_row", [f"{os.path.basename(path)}:{number}"], [";".join(fields)]))
            continue
        image = fields[at["Input.image_url"]].rsplit("/", 1)[-1]
        for i in range(1, n + 1):
            pair_id, text = f"{corpus}/{image}#{i}", fields[at[f"Input.text{i}"]]
            try:
                rating = float(fields[at[f"Answer.Q{i}Answer"]])
            except ValueError:
                rejects.append(reject(FORMAT, "rating_not_a_number", [pair_id], [fields[at[f"Answer.Q{i}Answer"]]]))
                continue
            if not text.strip():
                rejects.append(reject(FORMAT, "empty_text", [pair_id]))
                continue
            pairs.append({"id": pair_id, "image_path": f"{IMAGE_FOLDERS.get(corpus, corpus)}/{image}", "text": text,
                          "language": language, "image_id": image, "corpus": corpus, "candidate": i,
                          "rating": rating, "image_url": fields[at["Input.image_url"]]})
    return pairs, rejects, len(lines) - 1


def thoroughness_of(path: str) -> tuple[dict, str | None]:
    """(image url, caption) -> thoroughness rating from the sibling thoroughness file, if there is one."""
    corpus = os.path.basename(path).split("_")[0]
    for name in (f"{corpus}_throughness.csv", f"{corpus}_thoroughness.csv"):
        sibling = os.path.join(os.path.dirname(path), name)
        if os.path.isfile(sibling):
            pairs, _, _ = read_file(sibling, "")  # its malformed rows are the correctness file's too
            return {(p["image_url"], p["text"]): p["rating"] for p in pairs}, name
    return {}, None


def read_composite(source: str, options: ImportOptions) -> Imported:
    pairs, rejects, read, names = [], [], 0, []
    for path in files_in(source, "*_correctness.csv", FORMAT, "*_correctness.csv"):
        file_pairs, file_rejects, rows = read_file(path, options.language or "en")
        thoroughness, sibling = thoroughness_of(path)
        for pair in file_pairs:
            pair["thoroughness"] = thoroughness.get((pair["image_url"], pair["text"]))
        pairs, rejects, read = pairs + file_pairs, rejects + file_rejects, read + rows
        names += [os.path.basename(path)] + ([sibling] if sibling else [])
    names = ", ".join(names)
    return Imported({"pairs": (rows_table(pairs, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"AMT correctness results ({names})", read, rejects)
