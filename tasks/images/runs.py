"""Around the download stage: the input as rows to fetch, `--retry-failed`'s reopening of finished
shards, the cleanup of finished shards' partial files, and the run's one table (downloads.parquet)."""
from __future__ import annotations

import os

import polars as pl
import pyarrow as pa
import pyarrow.compute as pc

from xmdata.runtime import storage
from xmdata.runtime.atomic import sha256_file, write_parquet_atomic
from xmdata.runtime.records import finished_record
from xmdata.runtime.shards import ShardPaths, shard_index
from xmdata.runtime.stage import Stage
from xmdata.schemas import ContractError
from xmdata.schemas.images import DUPLICATE_OF, FIELD_NAMES, IMAGES_PATH, OK, TRANSIENT, check_input_columns
from xmdata.schemas.readers import read_any

from .decode import EXTENSIONS
from .download import journal_version
from .journal import Journal, write_journal
from .params import DownloadImagesParams
from .write import STAGE, file_name, partial_folder, put, read_previous_images


def read_download_input(path: str, params: DownloadImagesParams) -> pa.Table:
    """Every column kept; `id` as text (the row number, 0-based and zero-padded, when there is none);
    the URL column, and the caption column when one is named, must hold text."""
    table = read_any(path)  # a broken file, and --map, as every command
    check_input_columns(table.column_names, params.url_column, path)
    for column, what in ((params.url_column, "URLs"), (params.caption_column, "captions")):
        if column is None:
            continue
        if column not in table.column_names:
            raise ContractError(f"{path}: no column {column!r} (--caption-column); columns: "
                                f"{', '.join(table.column_names)}")
        kind = table.schema.field(column).type
        if not pa.types.is_string(kind) and not pa.types.is_large_string(kind):
            raise ContractError(f"{path}: column {column!r} holds {kind}, not {what}")
    if "id" not in table.column_names:
        return table.add_column(0, "id", pa.array([f"{i:09d}" for i in range(table.num_rows)], pa.string()))
    return table.set_column(table.column_names.index("id"), "id", pc.cast(table.column("id"), pa.string()))


def reopen_transient(stage: Stage, params: DownloadImagesParams, input_paths: list[str], root: str) -> int:
    """Finished shards with a transient failure lose their record; their other rows go to the journal
    (images staged again for tar and Parquet), so the rerun fetches only the transient rows and writes
    the rest as they were. Returns the rows reopened."""
    reopened = 0
    for path in input_paths:
        index = shard_index(path)
        paths = ShardPaths(root, stage.name, index)
        if finished_record(stage, paths, sha256_file(path)) is None:
            continue
        rows = storage.read_parquet(paths.data, columns=["id", *FIELD_NAMES]).to_pylist()
        keep = [r for r in rows if r["status"] not in TRANSIENT]
        if len(keep) == len(rows):
            continue
        images = read_previous_images(params.format, root, index, paths.data, [r["id"] for r in keep])
        for row in keep:
            row["_stored"] = None
            if row["id"] in images:
                row["_stored"] = f"{file_name(row['id'])}.{EXTENSIONS.get(row['format'], 'img')}"
                put(storage.join(partial_folder(root, index), row["_stored"]), images[row["id"]])
        write_journal(root, index, journal_version(params), keep)
        storage.remove(paths.record)
        reopened += len(rows) - len(keep)
    return reopened


def clear_partials(root: str, n_shards: int) -> None:
    """Journals and staged images of shards that have their record: no longer needed."""
    for index in range(n_shards):
        if not storage.exists(ShardPaths(root, STAGE, index).record):
            continue
        journal = Journal(root, index, {})
        folder = partial_folder(root, index)
        if storage.exists(journal.path):
            storage.remove(journal.path)
        for name in storage.listdir(folder):
            storage.remove(storage.join(folder, name))
        if not storage.is_url(folder) and os.path.isdir(folder):
            os.rmdir(folder)
    partial = storage.join(root, STAGE, "_partial")
    if not storage.is_url(root) and os.path.isdir(partial) and not os.listdir(partial):
        os.rmdir(partial)


def write_downloads(data_paths: list[str], out: str) -> pl.DataFrame:
    """OUT/downloads.parquet: every row of every shard without image bytes, and `duplicate_of`, the id
    of the first ok row (in id order) whose bytes have the same sha256. OUT/images.parquet: the ok rows
    without status and error_message (which would collide with the columns `score` adds), as the images
    contract: `path` (= image_path), `latitude`/`longitude` (the input's, a missing one from EXIF)."""
    frames = [pl.from_arrow(storage.read_parquet(p)).drop("image_bytes", strict=False) for p in data_paths]
    frame = pl.concat(frames, how="vertical").sort("id")
    key = pl.when(pl.col("status") == OK).then(pl.col("sha256"))
    first = pl.col("id").first().over(key)
    frame = frame.with_columns(
        pl.when(key.is_not_null() & (first != pl.col("id"))).then(first).alias(DUPLICATE_OF.name))
    write_parquet_atomic(frame.to_arrow(), storage.join(out, "downloads.parquet"))
    ok = frame.filter(pl.col("status") == OK).drop("status", "error_message")
    write_parquet_atomic(as_images(ok).to_arrow(), storage.join(out, "images.parquet"))
    return frame


def as_images(ok: pl.DataFrame) -> pl.DataFrame:
    """The ok rows with the images contract's columns. Coordinates are one pair from one source: the
    input's where it gives either value (read as numbers; text that is not one becomes null, and
    geocoding rejects the row, counted), else the image's EXIF GPS; null when neither has them."""
    given = [pl.col(c).is_not_null() for c in ("latitude", "longitude") if c in ok.columns]
    from_input = pl.any_horizontal(given) if given else pl.lit(False)

    def coordinate(name: str) -> pl.Expr:
        own = pl.col(name).cast(pl.Float64, strict=False) if name in ok.columns else pl.lit(None, pl.Float64)
        return pl.when(from_input).then(own).otherwise(pl.col(f"exif_{name}")).alias(name)
    return ok.with_columns(pl.col("image_path").alias(IMAGES_PATH), coordinate("latitude"), coordinate("longitude"))
