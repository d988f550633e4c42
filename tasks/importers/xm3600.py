"""Crossmodal-3600: `captions.jsonl`, one image a line: {"image/key": …, ["image/locale": …,]
"<lang>": {"caption": [...], "caption/tokenized": [...]}, …} (the layout of the XM3600 captions.zip
and of the loaders in torchvision-style and HELM code). Images are `<image/key>.jpg` (images.tgz)."""
from __future__ import annotations

import os

import pyarrow as pa

from xmdata.schemas import CAPTIONS, IMAGES

from .base import Imported, json_lines, layout_error, reject
from .options import ImportOptions

FORMAT = "xm3600"
EXPECTED = '{"image/key": "…", "<lang>": {"caption": ["…"], "caption/tokenized": ["…"]}, …} per line'
CAPTION_FIELDS = [pa.field("caption_index", pa.int32()), pa.field("caption_tokenized", pa.string()),
                  pa.field("image_locale", pa.string())]
IMAGE_FIELDS = [pa.field("locale", pa.string())]


def captions_file(source: str) -> str:
    return os.path.join(source, "captions.jsonl") if os.path.isdir(source) else source


def read_xm3600(source: str, options: ImportOptions) -> Imported:
    path = captions_file(source)
    records = json_lines(path, FORMAT, EXPECTED, ("image/key",))
    captions, images, rejects = [], [], []
    for number, record in records:
        key, locale = str(record["image/key"]), record.get("image/locale")
        languages = {k: v for k, v in record.items() if not k.startswith("image/")}
        for language, entry in sorted(languages.items()):
            if not isinstance(entry, dict) or not isinstance(entry.get("caption"), list):
                raise layout_error(FORMAT, path, EXPECTED, number, None,
                                   f"language {language!r} of image {key!r} has no caption list")
            tokenized = entry.get("caption/tokenized") or []
            for index, text in enumerate(entry["caption"]):
                caption_id = f"{key}/{language}/{index}"
                if not isinstance(text, str) or not text.strip():
                    rejects.append(reject(FORMAT, "empty_caption", [caption_id], [text]))
                    continue
                captions.append({"id": caption_id, "text": text, "language": language, "image_id": key,
                                 "caption_index": index,
                                 "caption_tokenized": tokenized[index] if index < len(tokenized) else None,
                                 "image_locale": locale})
        images.append({"id": key, "latitude": None, "longitude": None, "path": f"{key}.jpg", "url": None,
                       "license": None, "locale": locale})
    if options.images:  # an image the captions name but the download lacks is refused, not silently kept
        present = [os.path.isfile(os.path.join(options.images, row["path"])) for row in images]
        rejects += [reject(FORMAT, "image_file_missing", [row["id"]], [row["path"]])
                    for row, ok in zip(images, present) if not ok]
        images = [row for row, ok in zip(images, present) if ok]
    caption_schema = pa.schema(list(CAPTIONS.schema) + CAPTION_FIELDS)
    image_schema = pa.schema(list(IMAGES.schema) + IMAGE_FIELDS)
    layout = "captions.jsonl (image/key + per-language caption and caption/tokenized lists" + (
        ", image/locale)" if any(r.get("image/locale") for _, r in records) else "; no image/locale)")
    return Imported(tables={"captions": (pa.Table.from_pylist(captions, caption_schema), CAPTIONS),
                            "images": (pa.Table.from_pylist(images, image_schema), IMAGES)},
                    layout=layout, rows_read=len(records), rejects=rejects,
                    notes={"languages": len({c["language"] for c in captions})})
