"""Flickr30k Entities (BryanPlummer/flickr30k_entities): `Sentences/<image>.txt` (phrases marked
`[/EN#<entity>/<type> words]`), `Annotations/<image>.xml` (Pascal VOC objects whose name is the
entity id, with a bndbox) and `test.txt` (the test images) -> phrases: one row per test image x entity
with a box (boxes of one entity merged), its phrase from the first sentence that names it. A
translation in the same markup (the French of Dong et al., 2021) is read with --language fr."""
from __future__ import annotations

import os
import re
import xml.etree.ElementTree as ElementTree

import pyarrow as pa

from .base import Imported, drop_missing_images, layout_error, reject, require_file
from .options import ImportOptions

FORMAT = "flickr30k-entities"
PHRASE = re.compile(r"\[/EN#(\d+)/[^\s\]]+ ([^\]]+)\]")
SCHEMA = pa.schema([("id", pa.string()), ("language", pa.string()), ("image_id", pa.string()),
                    ("image_path", pa.string()), ("entity", pa.string()), ("phrase", pa.string()),
                    ("box", pa.list_(pa.int32()))])


def entity_boxes(path: str) -> dict[str, list[int]]:
    """Entity id -> the box around all its boxes (x_min, y_min, x_max, y_max)."""
    try:
        root = ElementTree.parse(path).getroot()
    except ElementTree.ParseError as exc:
        raise layout_error(FORMAT, path, "a Pascal VOC annotation XML", problem=str(exc)) from exc
    boxes: dict[str, list[int]] = {}
    for obj in root.iter("object"):
        box = obj.find("bndbox")
        if box is None:
            continue
        corners = [int(float(box.findtext(k))) for k in ("xmin", "ymin", "xmax", "ymax")]
        for name in obj.findall("name"):
            old = boxes.get(name.text, corners)
            boxes[name.text] = [min(old[0], corners[0]), min(old[1], corners[1]),
                                max(old[2], corners[2]), max(old[3], corners[3])]
    return boxes


def read_flickr30k_entities(source: str, options: ImportOptions) -> Imported:
    language = options.language or "en"
    images = [line.strip() for line in open(require_file(os.path.join(source, "test.txt"), FORMAT, "test split list"),
                                            encoding="utf-8") if line.strip()]
    rows, rejects = [], []
    for image in images:
        phrases: dict[str, str] = {}
        sentences = require_file(os.path.join(source, "Sentences", f"{image}.txt"), FORMAT, "sentences")
        for line in open(sentences, encoding="utf-8"):
            for entity, words in PHRASE.findall(line):
                phrases.setdefault(entity, words.strip())
        boxes = entity_boxes(require_file(os.path.join(source, "Annotations", f"{image}.xml"), FORMAT, "annotation"))
        for entity, phrase in sorted(phrases.items(), key=lambda kv: int(kv[0])):
            row_id = f"{language}/{image}/{entity}"
            if entity not in boxes:
                rejects.append(reject(FORMAT, "entity_without_box", [row_id], [phrase]))
                continue
            rows.append({"id": row_id, "language": language, "image_id": image, "image_path": f"{image}.jpg",
                         "entity": entity, "phrase": phrase, "box": boxes[entity]})
    rows, missing = drop_missing_images(rows, options.images, FORMAT, "image_path")
    rejects += missing
    return Imported(tables={"phrases": (pa.Table.from_pylist(rows, SCHEMA), None)},
                    layout="Sentences/ + Annotations/ + test.txt", rows_read=len(images), rejects=rejects,
                    notes={"language": language, "test_images": len(images)})
