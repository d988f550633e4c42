"""ImageNet-1k validation with multilingual class names: `LOC_val_solution.csv` (ImageId,
PredictionString whose first word is the synset), `LOC_synset_mapping.txt` (the 1,000 synsets in class
index order) and Babel-ImageNet's `babel_imagenet.json` ({lang: [[class index, …], [name, …]]}; English
names, e.g. CLIP's, under "en" in the same shape) -> images (id, path, class_index, synset) and
labels (one row per language x class the language names)."""
from __future__ import annotations

import csv
import json
import os

import pyarrow as pa

from xmdata.schemas import IMAGES

from .base import Imported, drop_missing_images, layout_error, reject, require_file, rows_table
from .options import ImportOptions

FORMAT = "imagenet-val"
LABELS_SCHEMA = pa.schema([("id", pa.string()), ("language", pa.string()), ("class_index", pa.int32()),
                          ("synset", pa.string()), ("label", pa.string())])


def read_imagenet_val(source: str, options: ImportOptions) -> Imported:
    synsets = [line.split(" ", 1)[0] for line in open(require_file(os.path.join(source, "LOC_synset_mapping.txt"),
                                                                   FORMAT, "synset list"), encoding="utf-8")
               if line.strip()]
    index_of = {s: i for i, s in enumerate(synsets)}
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
    names = json.load(open(require_file(os.path.join(source, "babel_imagenet.json"), FORMAT, "class names"),
                           encoding="utf-8"))
    labels = []
    for language, pair in sorted(names.items()):
        if not (isinstance(pair, list) and len(pair) == 2 and len(pair[0]) == len(pair[1])):
            raise layout_error(FORMAT, "babel_imagenet.json", '{"<lang>": [[class index, …], [name, …]]}',
                               problem=f"language {language!r} is not two lists of equal length")
        labels += [{"id": f"{language}/{i}", "language": language, "class_index": int(i), "synset": synsets[int(i)],
                    "label": name} for i, name in zip(*pair) if 0 <= int(i) < len(synsets)]
    images, missing = drop_missing_images(images, options.images, FORMAT, "path")
    rejects += missing
    return Imported(tables={"images": (rows_table(images, IMAGES.schema), IMAGES),
                            "labels": (pa.Table.from_pylist(labels, LABELS_SCHEMA), None)},
                    layout="LOC_val_solution.csv + LOC_synset_mapping.txt + babel_imagenet.json", rows_read=len(rows),
                    rejects=rejects, notes={"classes": len(synsets), "label_languages": sorted(names)})
