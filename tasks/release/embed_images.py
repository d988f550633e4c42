"""Images inside a release (`embed_images: true`, `--embed-images`): every data table that refers to an
image — by `image_path` (under the folder the build recorded for it), by `image_id` (the images tables
the config reads, `id` and `path`), or by a Q/A table's string `image` (under its input's folder) — gets
an `image` column, the Hugging Face `Image` struct `{bytes, path}`, with the features in the Parquet
schema metadata (tasks/release/hf_features.py) so `datasets` and the Hub's viewer decode it. A string
`image` column is replaced by the struct, its value kept in `path`.

The bytes are the file's, byte for byte, unless `image_max_side` is set: an image whose longer side is
over it is stored as a JPEG of that size (quality JPEG_QUALITY). Row groups hold at most ROW_GROUP_BYTES
uncompressed (datasets' own MAX_ROW_GROUP_SIZE, 100MB; the viewer refuses groups over ~300MB), with the
page index on; a table over MAX_FILE_BYTES is split into numbered files `data/<table>-00000-of-00003.parquet`
that the card's data_files lists."""
from __future__ import annotations

import io
import os
import re
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.runtime import storage
from xmdata.runtime.atomic import replace_atomically

from .hf_features import IMAGE_TYPE, with_features

ROW_GROUP_BYTES = 100 * 1000 * 1000
MAX_FILE_BYTES = 500 * 1000 * 1000
JPEG_QUALITY = 90
IMAGE_COLUMN = "image"
ID_TABLES = ("images", "images_optimal")  # rows that are images: their image_id is the row's own
BAD_LISTED = 20  # bad images the card names with their reason, per table
QA_TABLES = ("qa_parallel",)  # whose string `image` is under the Q/A input's folder (MMMEB's are not: left as they are)


@dataclass
class ImageSources:
    """Where a release's image references point: {image id: (its path as the table writes it, the file)},
    {table: folder of its image_path values} and the folder of the Q/A input's `image` values."""

    by_id: dict[str, tuple[str, str]] = field(default_factory=dict)
    roots: dict[str, str] = field(default_factory=dict)
    qa_root: str | None = None

    def files(self) -> list[str]:
        """Every image file the ids name (the publication key fingerprints them)."""
        return sorted({file for _, file in self.by_id.values()})


def image_sources(config, work: str) -> ImageSources:
    """The images tables the config reads (image selection, scoring), the roots the build recorded
    (WORK/image_roots.json) and the Q/A input's folder."""
    import json

    from xmdata.schemas import IMAGES
    from xmdata.schemas.readers import read_input

    sources = ImageSources()
    for where, path in images_inputs(config):
        path = built_path(path, work)
        if storage.is_url(path) or not os.path.isfile(path):  # refused before the build (check_embeddable);
            continue  # an import's: its ids stay unresolved, and each row naming one is counted missing
        table = read_input(path, IMAGES)
        if "path" not in table.column_names:
            continue
        base = os.path.dirname(os.path.abspath(path))
        for image_id, rel in zip(table["id"].to_pylist(), table["path"].to_pylist()):
            if rel:
                sources.by_id.setdefault(str(image_id), (rel, os.path.normpath(os.path.join(base, rel))))
    roots = os.path.join(work, "image_roots.json")
    if os.path.isfile(roots):
        with open(roots, encoding="utf-8") as f:
            sources.roots = json.load(f)
    if (qa := getattr(config, "qa_translation", None)) and not storage.is_url(qa.input):
        sources.qa_root = os.path.dirname(os.path.abspath(qa.input))
    return sources


IMAGES_INPUTS = (("image_selection", "input"), ("scoring", "images"))  # the images tables whose ids are joined


def images_inputs(config) -> list[tuple[str, str]]:
    """(section.field, path) of the images tables the config reads (IMAGES_INPUTS)."""
    return [(f"{section}.{key}", path) for section, key in IMAGES_INPUTS
            if getattr(config, section, None) and (path := getattr(getattr(config, section), key, None))]


def built_path(path: str, work: str) -> str:
    """An `image_download:<table>` input as the build wrote it (WORK/image_download/<table>); any other as is."""
    from .built_inputs import DOWNLOAD_FOLDER, DOWNLOADED

    return os.path.join(work, DOWNLOAD_FOLDER, path[len(DOWNLOADED):]) if path.startswith(DOWNLOADED) else path


def check_embeddable(config) -> None:
    """With embed_images on, every images table the config names must be one the embedder reads: a local
    table with a `path` column (or one the build writes); ContractError in one line, before the build."""
    from .built_inputs import BUILT
    from xmdata.schemas.contract import ContractError

    if not config.embed_images:
        return
    for where, path in images_inputs(config):
        if storage.is_url(path):
            raise ContractError(f"embed_images: {where} {path}: the images embedded are read from a local images "
                                f"table and its files; copy it here first (e.g. `aws s3 sync`) and name the copy")
        if path.startswith(BUILT) or os.path.isdir(path) or not os.path.isfile(path):
            continue  # the build writes it / a photo folder / refused as missing by the input checks
        from xmdata.schemas import IMAGES
        from xmdata.schemas.readers import read_input

        if "path" not in read_input(path, IMAGES).column_names:
            raise ContractError(f"embed_images: {where} {path}: no path column, so no image file to embed")


def images_fingerprint(sources: ImageSources) -> dict:
    """The images' sha256, path-independent, for the manifest and so the publication key: the files the ids
    name and every file under each recorded image folder, hashed once and then known by size, mtime, inode
    and ctime (tasks/clean/fingerprint.py), so a rebuild with unchanged images reads none of them again."""
    from xmdata.tasks.clean.fingerprint import cache_path, files_fingerprint, reference_fingerprint

    refs = sorted(set(sources.by_id.values()))
    found = [(rel, file) for rel, file in refs if os.path.isfile(file)]
    facts = {"by_id": files_fingerprint([f for _, f in found], [r for r, _ in found], cache_path(
        "/embed-images/" + "\0".join(f for _, f in found)))} if found else {}
    folders = dict(sources.roots) | ({"qa_translation": sources.qa_root} if sources.qa_root else {})
    return facts | {name: reference_fingerprint(folder) for name, folder in sorted(folders.items())
                    if os.path.isdir(folder)}


def references(name: str, table: pa.Table, sources: ImageSources) -> list[tuple[str, str] | None] | None:
    """(reference, file) of each row's image (file None: an image id no images table resolves), or None for
    a table that refers to none."""
    columns = table.column_names
    if "image_path" in columns and name in sources.roots:
        root = sources.roots[name]
        return [(p, os.path.join(root, p)) if p else None for p in table["image_path"].to_pylist()]
    key = "image_id" if "image_id" in columns else "id" if name in ID_TABLES and "id" in columns else None
    if key:
        # an id no images table names is unresolved: (the id, no file), counted as a missing image
        return [sources.by_id.get(str(i), (str(i), None)) if i is not None else None for i in table[key].to_pylist()]
    if name in QA_TABLES and IMAGE_COLUMN in columns and pa.types.is_string(table.schema.field(IMAGE_COLUMN).type) \
            and sources.qa_root:
        return [(p, os.path.join(sources.qa_root, p)) if p else None for p in table[IMAGE_COLUMN].to_pylist()]
    return None


class BadImage(Exception):
    """A file that is there but is no image PIL decodes (corrupt, truncated, not an image, a bomb): its
    row's image is null, counted in the card as a bad image with this reason."""


def image_bytes(file: str, max_side: int | None) -> bytes | None:
    """The file's bytes (None when it is not there), or a JPEG at most MAX_SIDE on its longer side, turned
    upright first as its EXIF orientation says; BadImage for a file that is no image."""
    try:
        with open(file, "rb") as f:
            data = f.read()
    except OSError:
        return None
    from PIL import Image, ImageOps, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as image:  # the header alone, as every image's: no image, no bytes
            if max_side is None or max(image.size) <= max_side:
                return data
            image.load()
            image = ImageOps.exif_transpose(image).convert("RGB")
            image.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
            out = io.BytesIO()
            image.save(out, "JPEG", quality=JPEG_QUALITY)
            return out.getvalue()
    except (OSError, UnidentifiedImageError, Image.DecompressionBombError, SyntaxError, ValueError) as exc:
        raise BadImage(f"{type(exc).__name__}: {' '.join(str(exc).split())[:200]}") from None


def with_image_column(table: pa.Table, refs: list, max_side: int | None) -> tuple[pa.Table, int, list[tuple[str, str]]]:
    """TABLE with its `image` struct (replacing a string `image` column in place); how many rows name an
    image that is not there: its file missing, or its id unresolved; and (reference, reason) of each row whose
    file is no image. Both kinds of row have a null image, counted in the card."""
    values, missing, bad = [], 0, []
    for ref in refs:
        try:
            data = image_bytes(ref[1], max_side) if ref and ref[1] else None
        except BadImage as exc:
            bad.append((ref[0], str(exc)))
            values.append(None)
            continue
        missing += bool(ref) and data is None
        values.append({"bytes": data, "path": ref[0]} if data is not None else None)
    column = pa.array(values, IMAGE_TYPE)
    if IMAGE_COLUMN in table.column_names:
        return table.set_column(table.column_names.index(IMAGE_COLUMN), IMAGE_COLUMN, column), missing, bad
    return table.append_column(IMAGE_COLUMN, column), missing, bad


def _groups(table: pa.Table, limit: int) -> list[tuple[int, int]]:
    """(start, length) of row groups of at most LIMIT uncompressed bytes (one row when a row is bigger)."""
    other = table.drop_columns([IMAGE_COLUMN]).nbytes / max(table.num_rows, 1)
    sizes = [other + len(b or b"") for b in table[IMAGE_COLUMN].combine_chunks().field("bytes").to_pylist()]
    groups, start, total = [], 0, 0.0
    for i, size in enumerate(sizes):
        if i > start and total + size > limit:
            groups.append((start, i - start))
            start, total = i, 0.0
        total += size
    if table.num_rows:
        groups.append((start, table.num_rows - start))
    return groups or [(0, 0)]


def write_embedded(table: pa.Table, release: str, name: str, row_group_bytes: int = ROW_GROUP_BYTES,
                   max_file_bytes: int = MAX_FILE_BYTES) -> list[str]:
    """Write TABLE (with its image column) as data/<name>.parquet, or numbered files when it is over
    MAX_FILE_BYTES; returns their paths relative to RELEASE. Same table, same bytes."""
    table = table.combine_chunks()
    schema = with_features(table.schema, {IMAGE_COLUMN})
    groups = _groups(table, row_group_bytes)
    files, current, size = [], [], 0
    for start, length in groups:
        group_bytes = table.slice(start, length).nbytes
        if current and size + group_bytes > max_file_bytes:
            files.append(current)
            current, size = [], 0
        current.append((start, length))
        size += group_bytes
    files.append(current)
    names = [f"data/{name}.parquet"] if len(files) == 1 else \
        [f"data/{name}-{i:05d}-of-{len(files):05d}.parquet" for i in range(len(files))]
    others = [c for c in table.column_names if c != IMAGE_COLUMN]
    for rel, parts in zip(names, files):
        def write(tmp, parts=parts):
            # As datasets' ParquetWriter: image bytes (already compressed) stored plain, the rest zstd.
            with pq.ParquetWriter(tmp, schema, write_page_index=True, use_dictionary=others,
                                  compression={c: "zstd" for c in others} | {IMAGE_COLUMN: "none"},
                                  write_statistics=others) as writer:
                for start, length in parts:
                    writer.write_table(table.slice(start, length).cast(schema), row_group_size=max(length, 1))
        replace_atomically(os.path.join(release, rel), write)
    return names


def embed_release_images(release: str, tables: list[str], sources: ImageSources, max_side: int | None,
                         row_group_bytes: int = ROW_GROUP_BYTES, max_file_bytes: int = MAX_FILE_BYTES) -> dict:
    """Rewrite each of RELEASE's data tables that refers to images with its `image` column; returns
    {table: {"files": [...], "images": n, "missing": n, "bad": n, "bad_reasons": [(path, reason), …]}} for the
    tables it rewrote (the first BAD_LISTED bad images named)."""
    done = {}
    for name in tables:
        path = os.path.join(release, "data", f"{name}.parquet")
        table = pq.read_table(path)
        refs = references(name, table, sources)
        if refs is None:
            continue
        embedded, missing, bad = with_image_column(table, refs, max_side)
        files = write_embedded(embedded, release, name, row_group_bytes, max_file_bytes)
        if f"data/{name}.parquet" not in files:
            os.unlink(path)
        done[name] = {"files": files, "images": sum(r is not None for r in refs) - missing - len(bad),
                      "missing": missing, "bad": len(bad), "bad_reasons": bad[:BAD_LISTED]}
    return done


def table_of(file_name: str) -> str:
    """The table a data file holds: `t.parquet` or a numbered part `t-00001-of-00003.parquet`."""
    return re.sub(r"-\d{5}-of-\d{5}$", "", file_name.removesuffix(".parquet"))


def table_files(release: str, name: str) -> list[str]:
    """The Parquet files of table NAME under RELEASE/data/: the one file, or its numbered parts."""
    one = os.path.join(release, "data", f"{name}.parquet")
    if os.path.exists(one):
        return [one]
    folder = os.path.join(release, "data")
    part = re.compile(rf"{re.escape(name)}-\d{{5}}-of-\d{{5}}\.parquet")
    return sorted(os.path.join(folder, n) for n in (os.listdir(folder) if os.path.isdir(folder) else [])
                  if part.fullmatch(n))
