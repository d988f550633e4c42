"""XTD10 (adobe-research/Cross-lingual-Test-Dataset-XTD10): `test_image_names.txt` (one MSCOCO 2014
file name a line) and `test_1kcaptions_<lang>.txt` (the caption of the image on the same line, one
file per language) -> captions (id `<image>/<lang>`) and images (path = the file name)."""
from __future__ import annotations

import glob
import os
import re

from xmdata.schemas import CAPTIONS, IMAGES

from .base import Imported, drop_missing_images, layout_error, reject, require_file, rows_table
from .options import ImportOptions

FORMAT = "xtd10"
NAMES = "test_image_names.txt"
CAPTIONS_FILE = re.compile(r"test_1kcaptions_([A-Za-z_-]+)\.txt$")  # zh_CN as well as fr


def _lines(path: str) -> list[str]:
    return [line.rstrip("\r\n") for line in open(path, encoding="utf-8")]


def read_xtd10(source: str, options: ImportOptions) -> Imported:
    folder = source if os.path.isdir(source) else os.path.dirname(source)
    names = [n.strip() for n in _lines(require_file(os.path.join(folder, NAMES), FORMAT, "image list"))]
    while names and not names[-1]:
        names.pop()
    paths = sorted(glob.glob(os.path.join(folder, "test_1kcaptions_*.txt")))
    if odd := [p for p in paths if not CAPTIONS_FILE.search(p)]:  # refused, never skipped
        raise layout_error(FORMAT, odd[0], "test_1kcaptions_<lang>.txt, <lang> a language code")
    files = {CAPTIONS_FILE.search(p).group(1): p for p in paths}
    if not files:
        raise layout_error(FORMAT, folder, "test_1kcaptions_<lang>.txt files beside test_image_names.txt")
    captions, rejects = [], []
    for language, path in files.items():
        lines = _lines(path)
        if len([line for line in lines if line.strip()]) > len(names):
            raise layout_error(FORMAT, path, f"at most one caption a line for the {len(names)} images of {NAMES}",
                               len(names) + 1, lines[len(names)])
        for image, text in zip(names, lines + [""] * (len(names) - len(lines))):
            if not text.strip():
                rejects.append(reject(FORMAT, "empty_caption", [f"{image}/{language}"], [text]))
                continue
            captions.append({"id": f"{image}/{language}", "text": text.strip(), "language": language,
                             "image_id": image})
    images = [{"id": name, "latitude": None, "longitude": None, "path": name} for name in names]
    images, missing = drop_missing_images(images, options.images, FORMAT, "path")
    rejects += missing
    return Imported(tables={"captions": (rows_table(captions, CAPTIONS.schema), CAPTIONS),
                            "images": (rows_table(images, IMAGES.schema), IMAGES)},
                    layout=f"{NAMES} + test_1kcaptions_<lang>.txt ({', '.join(files)})", rows_read=len(names),
                    rejects=rejects, notes={"languages": sorted(files)})
