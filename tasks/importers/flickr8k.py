"""Flickr8K human judgements (Hodosh et al., 2013), tab-separated, no header. ExpertAnnotations.txt:
image, caption id (`<image>#<0-4>`, usually of another image), three expert ratings 1-4.
CrowdFlowerAnnotations.txt: image, caption id, share of yes, yes votes, no votes. Caption texts come
from Flickr8k.token.txt (`<image>#<n>` TAB caption). One row per judged pair.

Prepared as CLIPScore's evaluation does (jmhessel/clipscore@1036465, flickr8k_example/download.py),
which the multilingual CLIPScore paper follows. Expert: a pair whose candidate is one of the judged
image's own captions (matched by text) is left out (158 of 5,822: 5,664 pairs, 16,992 judgements;
`own_references` keeps them, marked); each expert rating is its own judgement (`expert_ratings`, a
list: `evaluate correlation --rating-column expert_ratings` correlates one row per rating, τ-c);
references are the image's five captions. CF: no pair is left out; the rating is the share of yes
votes (τ-b); references are the image's captions less every one of them judged as a candidate.
Captions belong to the image file they name: the token file's few `<image>.jpg.1#k` lines, which
CLIPScore's `split('.')[0]` folds into `<image>.jpg`, stay apart here."""
from __future__ import annotations

import os

from xmdata.schemas.contract import ContractError
from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, Published, reject, require_file, rows_table, tab_rows
from .options import ImportOptions

TOKEN_FILE = "Flickr8k.token.txt"
README = "the Flickr8K readme (Hodosh et al., 2013)"
CLIPSCORE = "CLIPScore's flickr8k_example (jmhessel/clipscore@1036465)"
# 5,822 and 40,460: the readme as public copies quote it. 158 / 5,664 / 16,992: the rule of CLIPScore's
# download.py applied to the real files once (they are behind a form: not re-run here).
EXPERT_COUNTS = Published(f"{README}; the pairs {CLIPSCORE}'s rule leaves out, as counted by applying that rule "
                          "to the real Flickr8k_text files (behind a registration form: not re-run here)",
                          {"pairs": 5822, "own_reference_pairs": 158, "evaluation_pairs": 5664,
                           "evaluation_judgements": 16992, "captions": 40460})
CROWDFLOWER_COUNTS = Published(README, {"pairs": 47830, "captions": 40460})


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


def _words(text: str) -> str:
    return " ".join(text.split())  # CLIPScore compares captions whitespace-normalised


def _pairs(fmt: str, source: str, file_name: str, expected: str, options: ImportOptions, rating_of) -> tuple:
    """(pairs, rejects, path, rows read, captions read, {image: its captions}) with `own_reference`
    marked and no references yet."""
    path = _locate(source, file_name)
    rows = tab_rows(path, fmt, expected, 5)  # the layout of the whole file is checked first
    texts = captions_by_id(path, options, fmt)
    captions: dict[str, list[str]] = {}
    for caption_id, text in texts.items():
        captions.setdefault(caption_id.split("#")[0], []).append(text)
    own = {image: {_words(t) for t in listed} for image, listed in captions.items()}
    pairs, rejects, language = [], [], options.language or "en"  # ImportOptions normalised it
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
        pairs.append({"id": pair_id, "image_path": image, "text": text, "language": language,
                      "image_id": image, "caption_id": caption_id, **rating,
                      "own_reference": _words(text) in own.get(image, ())})
    return pairs, rejects, path, len(rows), len(texts), captions


def _references(texts_of_image: list[str], leave_out: set[str]) -> list[str]:
    return [t for t in texts_of_image if _words(t) not in leave_out]


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
    fmt = "flickr8k-expert"
    pairs, rejects, path, read, n_captions, captions = _pairs(fmt, source, "ExpertAnnotations.txt",
                                                    "image TAB caption id TAB 3 ratings (1-4), no header", options,
                                                    _expert_rating)
    own = [p for p in pairs if p["own_reference"]]
    kept = pairs if options.own_references else [p for p in pairs if not p["own_reference"]]
    for p in kept:  # the image's five captions; an own-reference pair's without its own candidate
        p["refs"] = _references(captions.get(p["image_id"], []), {_words(p["text"])} if p["own_reference"] else set())
    evaluation = [p for p in pairs if not p["own_reference"]]
    counts = {"pairs": read, "own_reference_pairs": len(own), "evaluation_pairs": len(evaluation),
              "evaluation_judgements": sum(len(p["expert_ratings"]) for p in evaluation), "captions": n_captions}
    return Imported({"pairs": (rows_table(kept, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"{os.path.basename(path)} (tab-separated, 5 fields, no header) + {TOKEN_FILE}", read, rejects,
                    notes={"own_reference_pairs": {"count": len(own), "kept": options.own_references}},
                    counts=counts, published=EXPERT_COUNTS)


def read_crowdflower(source: str, options: ImportOptions) -> Imported:
    fmt = "flickr8k-cf"
    pairs, rejects, path, read, n_captions, captions = _pairs(
        fmt, source, "CrowdFlowerAnnotations.txt",
        "image TAB caption id TAB percent yes TAB yes votes TAB no votes, no header", options, _crowdflower_rating)
    judged_own: dict[str, set[str]] = {}
    for p in pairs:
        if p["own_reference"]:
            judged_own.setdefault(p["image_id"], set()).add(_words(p["text"]))
    for p in pairs:  # one list per image, as CLIPScore: its captions less every own caption judged as a candidate
        p["refs"] = _references(captions.get(p["image_id"], []), judged_own.get(p["image_id"], set()))
    return Imported({"pairs": (rows_table(pairs, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"{os.path.basename(path)} (tab-separated, 5 fields, no header) + {TOKEN_FILE}", read, rejects,
                    notes={"own_reference_pairs": {"count": sum(p["own_reference"] for p in pairs), "kept": True}},
                    counts={"pairs": read, "captions": n_captions}, published=CROWDFLOWER_COUNTS)
