"""Crossmodal-3600: `captions.jsonl` (captions.zip), one image a line: {"image/key": …, ["image/locale": …,]
"<lang>": {"caption": [...], "caption/tokenized": [...], "caption/tokenized/lowercase": [...]}, …}, as
the SEACrowd, HELM and big_vision loaders read it. Images are `<image/key>.jpg` (images.tgz); the image
list `image_attributions.csv` (web-data; ImageID, Subset, OriginalURL, License, Author, …), when it sits
next to captions.jsonl, adds each image's Open Images subset, URL, license and author."""
from __future__ import annotations

import os

import pyarrow as pa

from xmdata.schemas import CAPTIONS, IMAGES
from xmdata.schemas.readers import read_any

from xmdata.schemas.languages import language_code

from .base import Imported, Published, json_lines, layout_error, reject, rows_table
from .openimages import snake
from .options import ImportOptions

FORMAT = "xm3600"
EXPECTED = '{"image/key": "…", "<lang>": {"caption": ["…"], "caption/tokenized": ["…"]}, …} per line'
CAPTION_FIELDS = [pa.field("caption_index", pa.int32()), pa.field("caption_tokenized", pa.string()),
                  pa.field("caption_tokenized_lowercase", pa.string()), pa.field("image_locale", pa.string())]
ATTRIBUTIONS = "image_attributions.csv"
PUBLISHED = Published("google/crossmodal-3600@ad44c38: image_attributions.csv (3,600 images) and the 36 languages "
                      "its site and big_vision's loader list", {"images": 3600, "languages": 36})


def captions_file(source: str) -> str:
    return os.path.join(source, "captions.jsonl") if os.path.isdir(source) else source


def attributions(folder: str) -> dict[str, dict]:
    """ImageID -> its attribution row (snake_case names), or {} when the image list is not there."""
    path = os.path.join(folder, ATTRIBUTIONS)
    if not os.path.isfile(path):
        return {}
    table = read_any(path)
    if "ImageID" not in table.column_names:
        raise layout_error(FORMAT, path, "the XM3600 image list with an ImageID column", 1,
                           open(path, encoding="utf-8").readline())
    return {r["ImageID"]: {snake(k): v for k, v in r.items() if k != "ImageID"} for r in table.to_pylist()}


def _element(values: list, index: int):
    return values[index] if index < len(values) else None


def read_xm3600(source: str, options: ImportOptions) -> Imported:
    path = captions_file(source)
    records = json_lines(path, FORMAT, EXPECTED, ("image/key",))
    listed = attributions(os.path.dirname(os.path.abspath(path)))
    captions, images, rejects = [], [], []
    for number, record in records:
        if not isinstance(record["image/key"], (str, int)) or not str(record["image/key"]).strip():
            raise layout_error(FORMAT, path, EXPECTED, number, None, f"image/key {record['image/key']!r} is no key")
        key, locale = str(record["image/key"]), record.get("image/locale")
        languages = {k: v for k, v in record.items() if not k.startswith("image/")}
        for published, entry in sorted(languages.items()):
            if not isinstance(entry, dict) or not isinstance(entry.get("caption"), list):
                raise layout_error(FORMAT, path, EXPECTED, number, None,
                                   f"language {published!r} of image {key!r} has no caption list")
            language = language_code(published, f"{path} line {number}: key {published!r}")
            tokenized, lowercase = entry.get("caption/tokenized") or [], entry.get("caption/tokenized/lowercase") or []
            for index, text in enumerate(entry["caption"]):
                caption_id = f"{key}/{language}/{index}"
                if not isinstance(text, str) or not text.strip():
                    reason = "caption_not_text" if text is not None and not isinstance(text, str) else "empty_caption"
                    rejects.append(reject(FORMAT, reason, [caption_id], [text]))
                    continue
                captions.append({"id": caption_id, "text": text, "language": language, "image_id": key,
                                 "caption_index": index,
                                 "caption_tokenized": _element(tokenized, index),
                                 "caption_tokenized_lowercase": _element(lowercase, index), "image_locale": locale})
        attribution = listed.get(key, {})
        images.append({"id": key, "latitude": None, "longitude": None, "path": f"{key}.jpg",
                       "url": attribution.get("original_url"), "license": attribution.get("license"),
                       "locale": locale, **attribution})
    if options.images:  # an image the captions name but the download lacks is refused, not silently kept
        present = [os.path.isfile(os.path.join(options.images, row["path"])) for row in images]
        rejects += [reject(FORMAT, "image_file_missing", [row["id"]], [row["path"]])
                    for row, ok in zip(images, present) if not ok]
        images = [row for row, ok in zip(images, present) if ok]
    caption_schema = pa.schema(list(CAPTIONS.schema) + CAPTION_FIELDS)
    layout = "captions.jsonl (image/key + per-language caption lists" + (
        ", image/locale)" if any(r.get("image/locale") for _, r in records) else "; no image/locale)") + (
        f" + {ATTRIBUTIONS}" if listed else "")
    return Imported(tables={"captions": (pa.Table.from_pylist(captions, caption_schema), CAPTIONS),
                            "images": (rows_table(images, IMAGES.schema), IMAGES)},
                    layout=layout, rows_read=len(records), rejects=rejects,
                    counts={"images": len(records), "languages": len({c["language"] for c in captions})},
                    published=PUBLISHED,
                    notes={"languages": len({c["language"] for c in captions}),
                           "images_not_in_image_list": sum(1 for r in images if listed and r["id"] not in listed)})
