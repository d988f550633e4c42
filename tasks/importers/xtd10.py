"""XTD10 as adobe-research/Cross-lingual-Test-Dataset-XTD10 publishes it: `XTD10/` (test_image_names.txt,
one MSCOCO 2014 file name a line, and test_1kcaptions_<lang>.txt for en es it ko pl ru tr zh), `MIC/`
(de, fr) and `STAIR/` (jp, read as ja); line N of every caption file describes image N of the list
-> captions (id `<image>/<lang>`) and images (path: the file name, or train2014/… or val2014/… where
--images keeps COCO's folders). Also read: the XTD10/ folder itself, and one flat folder of all files."""
from __future__ import annotations

import glob
import os
import re

from xmdata.schemas import CAPTIONS, IMAGES
from xmdata.schemas.contract import ContractError
from xmdata.schemas.languages import language_code

from .base import Imported, Published, drop_missing_images, layout_error, reject, rows_table, text_lines
from .options import ImportOptions

FORMAT = "xtd10"
NAMES = "test_image_names.txt"
CAPTIONS_FILE = re.compile(r"test_1kcaptions_([A-Za-z_-]+)\.txt$")  # zh_CN as well as fr
SIBLINGS = ("MIC", "STAIR")  # de, fr and jp sit beside XTD10/, with no image list of their own
COCO = re.compile(r"COCO_(train|val)2014_")
PUBLISHED = Published("adobe-research/Cross-lingual-Test-Dataset-XTD10@d77ff16",
                      {"images": 1000, **{f"captions/{lang}": 1000 for lang in
                                          ("en", "es", "it", "ko", "pl", "ru", "tr", "zh", "de", "fr", "ja")}})


def _lines(path: str) -> list[str]:
    return [line.rstrip("\r\n") for _, line in text_lines(path, FORMAT)]  # CRLF, no final newline: as LF


def caption_folders(source: str) -> tuple[str, list[str], str]:
    """(folder of the image list, folders holding caption files, how they were found)."""
    folder = source if os.path.isdir(source) else os.path.dirname(source)
    if os.path.isfile(os.path.join(folder, "XTD10", NAMES)):  # the repository's root
        return (os.path.join(folder, "XTD10"), [os.path.join(folder, d) for d in ("XTD10", *SIBLINGS)],
                "the repository root")
    if not os.path.isfile(os.path.join(folder, NAMES)):
        raise layout_error(FORMAT, folder, f"the repository root (XTD10/{NAMES}, MIC/, STAIR/), its XTD10/ folder, "
                           f"or one folder with {NAMES} and test_1kcaptions_<lang>.txt", problem=f"no {NAMES}")
    siblings = [os.path.join(folder, "..", d) for d in SIBLINGS if os.path.isdir(os.path.join(folder, "..", d))]
    beside = " and ".join(f"../{os.path.basename(s)}/" for s in siblings)
    how = f"the image list's folder, {beside} read beside it" if siblings else "one folder"
    return folder, [folder, *siblings], how


def caption_files(folders: list[str]) -> dict[str, str]:
    """{language: file}: each code through language_code (jp -> ja); one language from two files is refused."""
    files: dict[str, str] = {}
    for path in sorted(p for f in folders for p in glob.glob(os.path.join(f, "test_1kcaptions_*.txt"))):
        if not (match := CAPTIONS_FILE.search(path)):  # refused, never skipped
            raise layout_error(FORMAT, path, "test_1kcaptions_<lang>.txt, <lang> a language code")
        language = language_code(match.group(1), os.path.normpath(path))
        if language in files:
            raise ContractError(f"{FORMAT}: {os.path.normpath(files[language])} and {os.path.normpath(path)} are "
                                f"both {language}: keep one of them")
        files[language] = path
    if not files:
        raise layout_error(FORMAT, folders[0], f"test_1kcaptions_<lang>.txt files beside {NAMES}")
    return files


def image_path(name: str, images: str | None) -> str:
    """NAME, or COCO's train2014/NAME or val2014/NAME where only that is under IMAGES."""
    match = COCO.match(name)
    if not images or not match or os.path.isfile(os.path.join(images, name)):
        return name
    nested = f"{match.group(1)}2014/{name}"
    return nested if os.path.isfile(os.path.join(images, nested)) else name


def read_captions(names: list[str], language: str, path: str) -> tuple[list[dict], list]:
    lines = _lines(path)
    if len([line for line in lines if line.strip()]) > len(names):
        raise layout_error(FORMAT, path, f"at most one caption a line for the {len(names)} images of {NAMES}",
                           len(names) + 1, lines[len(names)])
    rows, rejects = [], []
    for image, text in zip(names, lines + [""] * (len(names) - len(lines))):
        if not text.strip():
            rejects.append(reject(FORMAT, "empty_caption", [f"{image}/{language}"], [text]))
            continue
        rows.append({"id": f"{image}/{language}", "text": text.strip(), "language": language, "image_id": image})
    return rows, rejects


def layout(source: str, files: dict[str, str]) -> str:
    """Which folder gave which languages, relative to SOURCE: "XTD10/ (en, es), STAIR/ (ja from jp)"."""
    base = source if os.path.isdir(source) else os.path.dirname(source)
    by_folder: dict[str, list[str]] = {}
    for language, path in sorted(files.items()):
        code = CAPTIONS_FILE.search(path).group(1)
        by_folder.setdefault(os.path.relpath(os.path.dirname(path), base), []).append(
            language if code == language else f"{language} from {code}")
    return ", ".join(f"{folder}/ ({', '.join(langs)})" for folder, langs in sorted(by_folder.items()))


def read_xtd10(source: str, options: ImportOptions) -> Imported:
    list_folder, folders, how = caption_folders(source)
    names = [n.strip() for n in _lines(os.path.join(list_folder, NAMES))]
    while names and not names[-1]:
        names.pop()
    files = caption_files(folders)
    captions, rejects, counts = [], [], {"images": len(names)}
    for language, path in files.items():
        rows, refused = read_captions(names, language, path)
        captions += rows
        rejects += refused
        counts[f"captions/{language}"] = len(rows)
    images = [{"id": n, "latitude": None, "longitude": None, "path": image_path(n, options.images)} for n in names]
    images, missing = drop_missing_images(images, options.images, FORMAT, "path")
    return Imported(tables={"captions": (rows_table(captions, CAPTIONS.schema), CAPTIONS),
                            "images": (rows_table(images, IMAGES.schema), IMAGES)},
                    layout=f"{NAMES} + test_1kcaptions_<lang>.txt, {how}: {layout(source, files)}",
                    rows_read=len(names), rejects=rejects + missing,
                    notes={"languages": sorted(files)}, counts=counts, published=PUBLISHED)
