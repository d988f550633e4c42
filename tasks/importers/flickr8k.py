"""Flickr8K human judgements (Hodosh et al., 2013), as their readme describes them: tab-separated, no
header. ExpertAnnotations.txt: image, caption id (`<image>#<0-4>`, often of another image), three expert
ratings 1-4. CrowdFlowerAnnotations.txt: image, caption id, percent of yes, yes votes, no votes.
Caption texts come from Flickr8k.token.txt (`<image>#<n>` TAB caption). One row per judged pair,
aggregated as CLIPScore does: the mean expert rating; the share of yes votes for CrowdFlower."""
from __future__ import annotations

import os

from xmdata.schemas.contract import ContractError
from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, reject, require_file, rows_table, tab_rows
from .options import ImportOptions

TOKEN_FILE = "Flickr8k.token.txt"


def _locate(source: str, name: str) -> str:
    if not os.path.isdir(source):
        return source
    for candidate in (os.path.join(source, name), os.path.join(source, "Flickr8k_text", name)):
        if os.path.isfile(candidate):
            return candidate
    raise ContractError(f"{source}: no {name} in this folder (nor in Flickr8k_text/)")


def captions_by_id(annotations: str, options: ImportOptions, fmt: str) -> dict[str, str]:
    path = options.captions or os.path.join(os.path.dirname(annotations), TOKEN_FILE)
    require_file(path, fmt, "captions (--captions)")
    rows = tab_rows(path, fmt, f"{TOKEN_FILE}: '<image>#<n>' TAB caption, no header", 2)
    return {caption_id: text for _, (caption_id, text) in rows}


def _pairs(fmt: str, source: str, file_name: str, expected: str, options: ImportOptions, rating_of) -> Imported:
    path = _locate(source, file_name)
    rows = tab_rows(path, fmt, expected, 5)  # the layout of the whole file is checked first
    texts = captions_by_id(path, options, fmt)
    by_image: dict[str, list[str]] = {}
    for caption_id, text in texts.items():
        by_image.setdefault(caption_id.split("#")[0], []).append(text)
    pairs, rejects = [], []
    for number, (image, caption_id, *values) in rows:
        pair_id = f"{image}|{caption_id}"
        if caption_id not in texts:
            rejects.append(reject(fmt, "unknown_caption_id", [pair_id], [caption_id]))
            continue
        rating = rating_of(values)
        if isinstance(rating, str):  # a reason: the values do not convert
            rejects.append(reject(fmt, rating, [pair_id], ["\t".join(values)]))
            continue
        text = texts[caption_id]
        pairs.append({"id": pair_id, "image_path": image, "text": text, "language": options.language or "en",
                      "image_id": image, "caption_id": caption_id, **rating,
                      # references: the image's own captions but the candidate (as CLIPScore's preprocessing)
                      "refs": [t for t in by_image.get(image, []) if t != text]})
    layout = f"{os.path.basename(path)} (tab-separated, 5 fields, no header) + {TOKEN_FILE}"
    return Imported({"pairs": (rows_table(pairs, SCORE_INPUT.schema), SCORE_INPUT)}, layout, len(rows), rejects)


def _expert_rating(values: list[str]):
    try:
        ratings = [int(v) for v in values]
    except ValueError:
        return "rating_not_a_number"
    if any(r < 1 or r > 4 for r in ratings):
        return "rating_outside_1_4"
    return {"rating": sum(ratings) / len(ratings), "expert_ratings": ratings}


def _crowdflower_rating(values: list[str]):
    try:
        percent, yes, no = float(values[0]), int(values[1]), int(values[2])
    except ValueError:
        return "votes_not_numbers"
    if yes < 0 or no < 0 or yes + no == 0:
        return "no_votes"
    return {"rating": yes / (yes + no), "yes_percent": percent, "yes_votes": yes, "no_votes": no}


def read_expert(source: str, options: ImportOptions) -> Imported:
    return _pairs("flickr8k-expert", source, "ExpertAnnotations.txt",
                  "image TAB caption id TAB 3 ratings (1-4), no header", options, _expert_rating)


def read_crowdflower(source: str, options: ImportOptions) -> Imported:
    return _pairs("flickr8k-cf", source, "CrowdFlowerAnnotations.txt",
                  "image TAB caption id TAB percent yes TAB yes votes TAB no votes, no header", options,
                  _crowdflower_rating)
