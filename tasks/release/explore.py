"""RELEASE/explore/: a static page to browse a release — images on a map with their selection level,
captions per language, translations with their candidates, scores and decision, CLIPScores, rejects
by stage and reason, the clean checks' near-duplicate groups and contamination matches side by side — built from the published tables; it opens from file://, no server needed.

Same release, same bytes (the manifest hashes them): rows in sorted order, floats rounded, no time
and no path of the build machine. Images are referenced by the path the scoring stage read (relative
to its image folder, which the page asks for), never copied. Candidates sit in one file per target
language (`candidates/<lang>.js`), loaded when a translation is opened, so the page starts on the
texts alone."""
from __future__ import annotations

import json
import os
import re

import polars as pl

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_text_atomic
from xmdata.schemas.contract import ContractError
from xmdata.tasks.release.explore_page import page_html
from xmdata.tasks.release.manifest import read_manifest
from xmdata.tasks.selection.land import land_path
from xmdata.tasks.release.explore_tables import candidate_languages, candidates_by_language, images_table, \
    link_texts, matches_table, read_table, rejects_table, texts_table, rounded

FOLDER = "explore"


def write_explore(release: str, name: str, folder: str | None = None) -> list[str]:
    """Write RELEASE/explore/ (or FOLDER) from RELEASE's data/ and rejects/; returns its files as
    `explore/<file>`. A file an earlier run left there and this one did not write is removed."""
    data, candidates = explore_data(release)
    thumbs = embedded_thumbnails(release)
    files = {"index.html": page_html(name, bool(thumbs)), "data.js": _script("window.XM_DATA=", data)}
    if thumbs:
        files["images.js"] = _script("window.XM_IMAGES=", thumbs)
    files |= {f"candidates/{_file_name(lang)}.js": _script(f"XM_CANDIDATES({json.dumps(lang)},", units, ")")
              for lang, units in candidates.items()}
    folder = folder or os.path.join(release, FOLDER)
    for rel, text in sorted(files.items(), key=lambda item: item[0] == "index.html"):  # the page last: a
        write_text_atomic(text, os.path.join(folder, rel))  # folder with index.html is a finished one
    for here, _, names in os.walk(folder):
        for n in names:
            if os.path.relpath(os.path.join(here, n), folder) not in files:
                os.unlink(os.path.join(here, n))
    return sorted(f"{FOLDER}/{rel}" for rel in files)


def explore_data(release: str) -> tuple[dict, dict[str, dict]]:
    """The page's tables, column-wise: images, texts (captions and translations), rejects; and the
    translation candidates per target language, keyed by the translation's text id."""
    captions, clip = read_table(release, "captions"), read_table(release, "clip_scores")
    translations, candidates = read_table(release, "translations"), read_table(release, "translation_candidates")
    rejects = rejects_table(release)
    images = images_table(read_table(release, "images"), captions, clip, read_table(release, "image_downloads"))
    texts = link_texts(texts_table(captions, translations, clip), images)
    matches = matches_table(read_table(release, "clean_matches"), rejects)
    data = {"images": _columns(images), "texts": _columns(texts), "rejects": _columns(rejects),
            "matches": _columns(matches),
            "candidate_languages": {lang: _file_name(lang) for lang in candidate_languages(candidates)},
            "land": land_path() if images.height else ""}  # the map's backdrop: no tiles offline
    return data, candidates_by_language(translations, candidates)


THUMB_BYTES = 48 * 1024  # an embedded image up to this size is shown as it is, a larger one as a thumbnail
THUMB_SIDE = 256


PAGE_PATH_TABLES = ("clip_scores", "image_downloads")  # where the page's image paths come from (images_table), in order


def embedded_thumbnails(release: str) -> dict[str, str]:
    """{image path: data: URL} of the images embedded in RELEASE's tables (an `image` struct column,
    tasks/release/embed_images.py): the bytes themselves, or a JPEG of THUMB_SIDE for a big one. Read
    per (table, path): a path is relative to its own table's folder, so the same path in two tables may be
    two images. The page's paths are those of PAGE_PATH_TABLES (images_table), whose images win; a path
    only other tables hold is shown when they agree on its bytes. A cell that is no image is skipped."""
    import base64
    import hashlib
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    from .embed_images import table_of

    cells: dict[tuple[str, str], bytes] = {}  # (table, path) -> bytes
    folder = os.path.join(release, "data")
    for name in sorted(os.listdir(folder)) if os.path.isdir(folder) else []:
        path = os.path.join(folder, name)
        schema = pq.read_schema(path) if name.endswith(".parquet") else None
        if schema is None or "image" not in schema.names or not pa.types.is_struct(schema.field("image").type):
            continue
        table = table_of(name)
        for cell in pq.read_table(path, columns=["image"])["image"].to_pylist():
            if cell and cell.get("bytes") and cell.get("path"):
                cells.setdefault((table, cell["path"]), cell["bytes"])
    rank = {t: i for i, t in enumerate(PAGE_PATH_TABLES)}
    chosen: dict[str, bytes] = {}
    ambiguous: set[str] = set()
    for (table, path), data in sorted(cells.items(), key=lambda kv: (rank.get(kv[0][0], len(rank)), kv[0])):
        if path not in chosen:
            chosen[path] = data
            if table in rank:
                ambiguous.discard(path)
        elif hashlib.sha256(chosen[path]).digest() != hashlib.sha256(data).digest() and \
                not any((t, path) in cells for t in PAGE_PATH_TABLES):
            ambiguous.add(path)  # two tables, two images, one path, and no page table to say which
    thumbs = {}
    for path, data in chosen.items():
        if path not in ambiguous and (url := _data_url(data, base64, io)) is not None:
            thumbs[path] = url
    return dict(sorted(thumbs.items()))


def _data_url(data: bytes, base64, io) -> str | None:
    """The image as a data: URL (a thumbnail when big), or None for bytes that are no image."""
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:
            kind = (image.format or "png").lower()
            if len(data) > THUMB_BYTES or kind not in ("png", "jpeg", "gif", "webp"):
                image.load()
                image = ImageOps.exif_transpose(image).convert("RGB")
                image.thumbnail((THUMB_SIDE, THUMB_SIDE))
                out = io.BytesIO()
                image.save(out, "JPEG", quality=80)
                data, kind = out.getvalue(), "jpeg"
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError, SyntaxError, ValueError):
        return None  # no thumbnail: the page shows the row without its picture
    return f"data:image/{kind};base64," + base64.b64encode(data).decode("ascii")


def _columns(frame: pl.DataFrame) -> dict:
    """Column-wise JSON: numbers rounded; strings that repeat (language, level, stage, reason) as codes
    into their sorted distinct values, which keeps 130k rows small and fast to filter."""
    out = {"rows": frame.height}
    for name in frame.columns:
        series = frame[name]
        distinct = series.n_unique()
        if series.dtype == pl.String and distinct < frame.height and distinct <= max(64, frame.height // 20):
            values = sorted(series.drop_nulls().unique().to_list())
            index = {v: i for i, v in enumerate(values)}
            out[name] = {"values": values, "codes": [-1 if v is None else index[v] for v in series.to_list()]}
        else:
            out[name] = [rounded(v) for v in series.to_list()]
    return out


def _script(head: str, obj, tail: str = "") -> str:
    # JSON as a JS literal (valid JS since ES2019): at XM3600's size Chromium opened the page in 2.4 s
    # where JSON.parse("…") of the same data took 2.7 s (bench/explore_page.py).
    text = json.dumps(obj, ensure_ascii=False, sort_keys=True, separators=(",", ":"), allow_nan=False)
    return f"{head}{text}{tail};\n"


def _file_name(lang: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]", "_", lang) or "_"


def ensure_explore(release: str) -> str:
    """The folder of RELEASE's explore page, written first when missing. A release built with it has it
    inside (hashed by its manifest); for one built before, the page goes to XMDATA_CACHE/explore/<key>,
    never into the release, whose `release verify` would then find files its manifest does not list."""
    if storage.is_url(release):
        raise ContractError(f"{release}: explore reads a local release; copy it here first "
                            f"(e.g. `aws s3 sync {release} ./release`)")
    if not os.path.isdir(os.path.join(release, "data")):
        raise ContractError(f"{release}: not a release (no data/ folder): give the folder `xmdata release` wrote")
    inside = os.path.join(release, FOLDER)
    if os.path.exists(os.path.join(inside, "index.html")):
        return inside
    try:
        manifest = read_manifest(release)
        name, key = manifest["release"]["name"], manifest["release_sha256"][:16]
    except (ContractError, KeyError, TypeError):  # tables without a manifest: nothing to break
        write_explore(release, os.path.basename(os.path.abspath(release)))
        return inside
    os.makedirs(os.path.join(storage.cache_root(), FOLDER), mode=0o700, exist_ok=True)  # the owner's, as every cache
    folder = os.path.join(storage.cache_root(), FOLDER, f"{re.sub(r'[^A-Za-z0-9._-]', '_', name)}-{key}")
    if not os.path.exists(os.path.join(folder, "index.html")):
        write_explore(release, name, folder)
    return folder
