"""VALSE (Parcalabescu et al., 2022): one JSON file per piece (`existence.json`, `counting-hard.json`,
…), an object of instances by id, each with dataset, image_file, caption, foil, linguistic_phenomena
and mturk votes (caption, foil, other). Each instance becomes two pairs to score, its caption and its
foil, tied by item_id; `evaluate valse` reads the scored pairs back as caption_score / foil_score."""
from __future__ import annotations

import json
import os

from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, files_in, layout_error, reject, rows_table
from .options import ImportOptions

FORMAT = "valse"
EXPECTED = '{"<id>": {"dataset": …, "image_file": …, "caption": …, "foil": …, "mturk": {…}}, …}'
REQUIRED = ("image_file", "caption", "foil")


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


def read_valse(source: str, options: ImportOptions) -> Imported:
    pieces = {path: load_piece(path) for path in files_in(source, "*.json", FORMAT, ".json piece")}  # every file checked before any row
    rows, rejects, read, not_valid = [], [], 0, 0
    for path, data in pieces.items():
        piece = os.path.basename(path)[:-len(".json")]
        for key, item in data.items():
            read += 1
            votes = item.get("mturk") or {}
            valid = votes.get("caption") is not None and votes["caption"] >= 2
            if options.valid_only and not valid:
                not_valid += 1
                continue
            texts = {"caption_score": item["caption"], "foil_score": item["foil"]}
            if not all(isinstance(t, str) and t.strip() for t in texts.values()):
                rejects.append(reject(FORMAT, "empty_or_not_text", [key], [json.dumps(texts, ensure_ascii=False)]))
                continue
            common = {"image_path": os.path.join(item.get("dataset") or "", item["image_file"]),
                      "image_id": item["image_file"], "language": item.get("language") or options.language or "en",
                      "item_id": key, "piece": piece, "phenomenon": item.get("linguistic_phenomena") or piece,
                      "dataset": item.get("dataset"), "original_split": item.get("original_split"),
                      "classes": json.dumps(item.get("classes"), ensure_ascii=False),
                      "mturk_caption": votes.get("caption"), "mturk_foil": votes.get("foil"),
                      "mturk_other": votes.get("other"), "valid": valid}
            rows += [{"id": f"{key}#{role.split('_')[0]}", "text": text, "score_as": role, **common}
                     for role, text in texts.items()]
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"{len(pieces)} piece file(s), object of instances by id", read, rejects,
                    notes={"left_out_not_valid": not_valid} if options.valid_only else {})
