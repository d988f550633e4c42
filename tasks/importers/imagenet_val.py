"""ImageNet-1k validation with multilingual class names: `LOC_val_solution.csv` (ImageId,
PredictionString whose first word is the synset), `LOC_synset_mapping.txt` (the 1,000 synsets in class
index order) and Babel-ImageNet's `babel_imagenet.json` ({"EN": [[class index, …], [name, …]]}, keys
upper case; EN holds BabelNet lemmas such as "Tinca tinca", not CLIP's names: --english-names gives en
from a file) -> images (id, path, class_index, synset) and labels (one row per language x named class)."""
from __future__ import annotations

import csv
import json
import os

import pyarrow as pa

from xmdata.schemas import IMAGES
from xmdata.schemas.languages import LanguageCodeError, language_code

from .base import Imported, Published, drop_missing_images, layout_error, reject, require_file, rows_table, text_lines
from .options import ImportOptions

FORMAT = "imagenet-val"
BABEL = "babel_imagenet.json"
LABELS_SCHEMA = pa.schema([("id", pa.string()), ("language", pa.string()), ("class_index", pa.int32()),
                          ("synset", pa.string()), ("label", pa.string()), ("source_code", pa.string()),
                          ("label_source", pa.string())])
PUBLISHED = Published("gregor-ge/Babel-ImageNet@317c498 (data/babel_imagenet.json)",
                      {"languages": 93, "labels/en": 1000, "labels/de": 738, "labels/fr": 799, "labels/it": 773,
                       "labels/es": 845})
BABELNET_NOTE = ("babelnet (babel_imagenet.json's EN: BabelNet lemmas such as 'Tinca tinca'; Babel-ImageNet's "
                 "own evaluation uses CLIP's names instead: --english-names)")


def language_keys(names: dict, path: str) -> tuple[dict[str, str], dict[str, str]]:
    """({key: code} kept, {key: reason} refused). A key that is its code itself takes it before one that only
    normalises to it (SR before SH, BE before BE_X_OLD); a key naming no language is refused, not the file."""
    codes, refused = {}, {}
    for key in names:
        try:
            codes[key] = language_code(key, f"{path} key {key!r}")
        except LanguageCodeError:
            refused[key] = "not_a_language_code"
    kept: dict[str, str] = {}
    for key in sorted(codes, key=lambda k: k.lower() != codes[k]):  # stable: file order otherwise
        if codes[key] in kept.values():
            refused[key] = "language_code_taken"
        else:
            kept[key] = codes[key]
    return kept, refused


def english_names(path: str, classes: int) -> list[str]:
    """One non-empty name a line, one line per class in class-index order."""
    names = [line.strip() for _, line in text_lines(require_file(path, FORMAT, "English names"), FORMAT)]
    expected = f"{classes:,} English class names, one a line in class-index order"
    for number, name in enumerate(names, start=1):
        if not name:
            raise layout_error(FORMAT, path, expected, number, "", "an empty line")
    if len(names) != classes:
        raise layout_error(FORMAT, path, expected, min(len(names), classes) + 1, None, f"{len(names):,} lines")
    return names


def babel_rows(key: str, pair, path: str) -> list[tuple[int, str]]:
    """(class index, name) of one key, or the whole file refused when the key is not in the layout."""
    if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, list) for p in pair)
            and len(pair[0]) == len(pair[1])
            and all(isinstance(i, int) for i in pair[0]) and all(isinstance(n, str) for n in pair[1])):
        raise layout_error(FORMAT, path, '{"<LANG>": [[class index, …], [name, …]]}',
                           problem=f"key {key!r} is not two lists of equal length, of class indices and names")
    return list(zip(*pair))


def read_labels(source: str, synsets: list[str], options: ImportOptions) -> tuple[list[dict], list, dict]:
    """(label rows, rejects, counts) from babel_imagenet.json; en from --english-names when given."""
    path = require_file(os.path.join(source, BABEL), FORMAT, "class names")
    names = json.load(open(path, encoding="utf-8"))
    if not isinstance(names, dict):
        raise layout_error(FORMAT, path, '{"<LANG>": [[class index, …], [name, …]]}', problem="not a JSON object")
    kept, refused = language_keys(names, BABEL)
    labels, rejects, counts = [], [], {"languages": len(names)}
    for key, pair in names.items():
        rows = babel_rows(key, pair, path)
        if key in refused:
            rejects.append(reject(FORMAT, refused[key], [f"{key}/{i}" for i, _ in rows], [key] * len(rows)))
            continue
        code = kept[key]
        counts[f"labels/{code}"] = len(rows)
        if outside := [f"{key}/{i}" for i, _ in rows if not 0 <= i < len(synsets)]:
            rejects.append(reject(FORMAT, "class_index_out_of_range", outside, [key] * len(outside)))
        if code != "en" or not options.english_names:  # else replaced below, as the note says
            labels += [{"id": f"{code}/{i}", "language": code, "class_index": i, "synset": synsets[i], "label": name,
                        "source_code": key, "label_source": "babelnet"} for i, name in rows if 0 <= i < len(synsets)]
    if options.english_names:
        labels += [{"id": f"en/{i}", "language": "en", "class_index": i, "synset": synsets[i], "label": name,
                    "source_code": None, "label_source": "english_names"}
                   for i, name in enumerate(english_names(options.english_names, len(synsets)))]
    return labels, rejects, counts


def read_images(source: str, index_of: dict[str, int]) -> tuple[list[dict], list, int]:
    solution = require_file(os.path.join(source, "LOC_val_solution.csv"), FORMAT, "validation labels")
    with open(solution, encoding="utf-8", newline="") as handle:
        rows = list(csv.DictReader(handle))
    if not rows or not {"ImageId", "PredictionString"} <= set(rows[0]):
        raise layout_error(FORMAT, solution, "ImageId,PredictionString with the synset first", 1,
                           open(solution, encoding="utf-8").readline())
    images, rejects = [], []
    for row in sorted(rows, key=lambda r: r["ImageId"]):  # the validation split's own order
        synset = (row["PredictionString"] or "").split(" ", 1)[0]
        if synset not in index_of:
            rejects.append(reject(FORMAT, "unknown_synset", [row["ImageId"]], [synset]))
            continue
        images.append({"id": row["ImageId"], "latitude": None, "longitude": None, "path": f"{row['ImageId']}.JPEG",
                       "class_index": index_of[synset], "synset": synset})
    return images, rejects, len(rows)


def read_imagenet_val(source: str, options: ImportOptions) -> Imported:
    mapping = require_file(os.path.join(source, "LOC_synset_mapping.txt"), FORMAT, "synset list")
    synsets = [line.split(" ", 1)[0] for _, line in text_lines(mapping, FORMAT) if line.strip()]
    images, rejects, rows_read = read_images(source, {s: i for i, s in enumerate(synsets)})
    labels, label_rejects, counts = read_labels(source, synsets, options)
    english = (f"{os.path.basename(options.english_names)} (replacing babel_imagenet.json's EN)"
               if options.english_names else BABELNET_NOTE)
    images, missing = drop_missing_images(images, options.images, FORMAT, "path")
    notes = {"classes": len(synsets), "english_names": english,
             "label_languages": sorted({r["language"] for r in labels})}
    return Imported(tables={"images": (rows_table(images, IMAGES.schema), IMAGES),
                            "labels": (pa.Table.from_pylist(labels, LABELS_SCHEMA), None)},
                    layout=f"LOC_val_solution.csv + LOC_synset_mapping.txt + {BABEL}"
                           + (" + English names" if options.english_names else ""),
                    rows_read=rows_read, rejects=rejects + label_rejects + missing, notes=notes,
                    counts=counts, published=PUBLISHED)
