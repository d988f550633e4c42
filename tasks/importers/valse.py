"""VALSE (Parcalabescu et al., 2022; Heidelberg-NLP/VALSE `data/`, checked at 2152d90): one JSON file
per piece (`existence.json`, `counting-hard.json`, … 11 of them), an object of instances by key, each
with dataset, image_file, caption, foil, linguistic_phenomena and mturk votes (caption, foil, other).

Keys repeat across piece files (`actions_test_N` in actant-swap and action-replacement,
`counting_visual7w_N` in the counting pieces): an instance is its piece and its key, so ids are
`<piece>/<key>` and nothing is lost. Each instance becomes two pairs to score, its caption and its
foil, tied by item_id; `evaluate valse` reads them back as caption_score / foil_score per piece."""
from __future__ import annotations

import json
import os

from xmdata.schemas.languages import language_code
from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, Published, files_in, layout_error, reject, rows_table
from .options import ImportOptions

FORMAT = "valse"
EXPECTED = '{"<id>": {"dataset": …, "image_file": …, "caption": …, "foil": …, "mturk": {…}}, …}'
REQUIRED = ("image_file", "caption", "foil")
# The publisher's pieces: (instances, valid: mturk.caption >= 2 as README and the authors' scripts count).
PIECES = {"existence": (534, 505), "plurals": (1000, 851), "counting-hard": (1000, 868),
          "counting-small-quant": (1000, 900), "counting-adversarial": (756, 691), "relations": (614, 535),
          "action-replacement": (779, 648), "actant-swap": (1042, 949), "coreference-standard": (916, 708),
          "coreference-hard": (141, 104), "foil-it": (1000, 943)}
PUBLISHED = Published("Heidelberg-NLP/VALSE@2152d90 data/*.json (8,782 instances, 7,702 valid, over 11 pieces)",
                      {"instances": 8782, "valid": 7702, **{f"instances/{p}": n for p, (n, _) in PIECES.items()},
                       **{f"valid/{p}": v for p, (_, v) in PIECES.items()}})
# Image folders: one per source collection, whatever spelling the piece uses (coco2017 and coco_2017 alike).
IMAGE_FOLDERS = {"SWiG": "swig", "VisDial_v1.0": "visdial", "visual7w": "visual7w", "FOIL dataset": "coco2014",
                 "coco2017": "coco2017", "coco_2017": "coco2017"}


def load_piece(path: str) -> dict:
    text = open(path, encoding="utf-8").read()
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        line = text.splitlines()[exc.lineno - 1] if text.splitlines() else ""
        raise layout_error(FORMAT, path, EXPECTED, exc.lineno, line, f"not JSON: {exc.msg}") from exc
    if not isinstance(data, dict):
        raise layout_error(FORMAT, path, EXPECTED, 1, text.splitlines()[0] if text else "", "not an object of instances")
    for key, value in data.items():
        if not isinstance(value, dict) or any(k not in value for k in REQUIRED):
            raise layout_error(FORMAT, path, EXPECTED, None, None,
                               f"instance {key!r} lacks {', '.join(k for k in REQUIRED if not isinstance(value, dict) or k not in value)}")
    return data


def is_valid(item: dict) -> bool:
    votes = item.get("mturk") or {}
    return isinstance(votes.get("caption"), int) and votes["caption"] >= 2


def pairs_of(piece: str, key: str, item: dict, language: str) -> list[dict]:
    votes = item.get("mturk") or {}
    dataset = item.get("dataset") or ""
    item_id = f"{piece}/{key}"
    common = {"image_path": os.path.join(IMAGE_FOLDERS.get(dataset, dataset), item["image_file"]),
              "image_id": item["image_file"], "language": language, "item_id": item_id, "piece": piece,
              "source_key": key, "phenomenon": item.get("linguistic_phenomena") or piece, "dataset": item.get("dataset"),
              "original_split": item.get("original_split"), "classes": json.dumps(item.get("classes"), ensure_ascii=False),
              "mturk_caption": votes.get("caption"), "mturk_foil": votes.get("foil"), "mturk_other": votes.get("other"),
              "valid": is_valid(item)}
    return [{"id": f"{item_id}#{role}", "text": item[role], "score_as": f"{role}_score", **common}
            for role in ("caption", "foil")]


def read_valse(source: str, options: ImportOptions) -> Imported:
    pieces = {path: load_piece(path) for path in files_in(source, "*.json", FORMAT, ".json piece")}  # every file checked before any row
    rows, rejects, counts, not_valid = [], [], {"instances": 0, "valid": 0}, 0
    for path, data in pieces.items():
        piece = os.path.basename(path)[:-len(".json")]
        counts[f"instances/{piece}"], counts[f"valid/{piece}"] = len(data), sum(map(is_valid, data.values()))
        counts["instances"] += len(data)
        counts["valid"] += counts[f"valid/{piece}"]
        for key, item in data.items():
            if options.valid_only and not is_valid(item):
                not_valid += 1
                continue
            if not all(isinstance(item[r], str) and item[r].strip() for r in ("caption", "foil")):
                rejects.append(reject(FORMAT, "empty_or_not_text", [f"{piece}/{key}"],
                                      [json.dumps({r: item[r] for r in ("caption", "foil")}, ensure_ascii=False)]))
                continue
            language = options.language or language_code(item.get("language") or "en", f"{path}: instance {key!r}")
            rows += pairs_of(piece, key, item, language)
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"{len(pieces)} piece file(s), object of instances by id", counts["instances"], rejects,
                    notes={"pieces": sorted(os.path.basename(p)[:-5] for p in pieces),
                           **({"left_out_not_valid": not_valid} if options.valid_only else {})},
                    counts=counts, published=PUBLISHED)
