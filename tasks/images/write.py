"""Where a shard's images go, by `--format`: files under OUT/images/<shard>/ (the row's image_path, which
score and select-images read), one tar per shard under OUT/webdataset/ (`<key>.<ext>` + `<key>.json` [+ `<key>.txt`]),
or the bytes in an `image_bytes` column of the shard's Parquet. Tar and Parquet rows are staged one
file each under the stage's `_partial/` until the shard is packed, so a killed run loses none."""
from __future__ import annotations

import hashlib
import io
import json
import os
import re
import tarfile

import pyarrow as pa

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_bytes_atomic
from xmdata.schemas.images import FIELD_NAMES, IMAGE_BYTES

from .decode import EXTENSIONS

STAGE = "download_images"
SAFE = re.compile(r"[A-Za-z0-9_-]{1,80}")


def file_name(row_id: str) -> str:
    """The row's id when it is a safe file name, else a hash of it (marked `~`, which no safe id has)."""
    return row_id if SAFE.fullmatch(row_id) else "~" + hashlib.blake2b(row_id.encode(), digest_size=10).hexdigest()


def partial_folder(root: str, index: int) -> str:
    return storage.join(root, STAGE, "_partial", f"shard-{index:05d}")


def put(path: str, data: bytes) -> None:
    """Whole or absent (runtime/atomic.py). No fsync per image: a killed process loses nothing the OS
    has, and the journal that vouches for the file is not synced either."""
    write_bytes_atomic(data, path, sync=False)


class ImageStore:
    """One shard's images: `store` one row's image as it is decoded, `pack` the shard at the end."""

    def __init__(self, format: str, root: str, index: int, caption_column: str | None = None):
        self.format, self.root, self.index, self.caption_column = format, root, index, caption_column

    def store(self, row_id: str, image_format: str, data: bytes) -> tuple[str | None, str]:
        """(image_path relative to the root or None, the stored file's name)."""
        name = f"{file_name(row_id)}.{EXTENSIONS.get(image_format, image_format.lower())}"
        if self.format == "files":
            relative = f"images/{self.index:05d}/{name}"
            put(storage.join(self.root, *relative.split("/")), data)
            return relative, name
        put(storage.join(partial_folder(self.root, self.index), name), data)
        return None, name

    def has(self, entry: dict) -> bool:
        """A journal's ok row still has its file (a row whose file went missing is fetched again)."""
        if entry["status"] != "ok" or storage.is_url(self.root):  # on a store: a HEAD per row, not worth it
            return True
        if entry["_stored"] is not None and self.format != "files":
            return os.path.exists(storage.join(partial_folder(self.root, self.index), entry["_stored"]))
        return os.path.exists(storage.join(self.root, *entry["image_path"].split("/")))

    def staged(self, name: str) -> bytes:
        return storage.read_bytes(storage.join(partial_folder(self.root, self.index), name))

    def pack(self, table: pa.Table, names: list[str | None]) -> pa.Table:
        """The shard's table as written: tar members beside it, or the bytes column appended."""
        if self.format == "parquet":
            column = [None if n is None else self.staged(n) for n in names]
            return table.append_column(IMAGE_BYTES, pa.array(column, IMAGE_BYTES.type))
        if self.format == "webdataset":
            path = storage.join(self.root, "webdataset", f"shard-{self.index:05d}.tar")
            put(path, self._tar(table, names))
        return table

    def _tar(self, table: pa.Table, names: list[str | None]) -> bytes:
        """Deterministic: members in row order, no times, owners or modes of this machine."""
        sink = io.BytesIO()
        metadata = table.select([c for c in table.column_names if c in ("id", *FIELD_NAMES)]).to_pylist()
        captions = table.column(self.caption_column).to_pylist() if self.caption_column else [None] * len(names)
        with tarfile.open(fileobj=sink, mode="w", format=tarfile.USTAR_FORMAT) as tar:
            for name, meta, caption in zip(names, metadata, captions):
                if name is None:
                    continue
                key, ext = name.rsplit(".", 1)  # file names hold no other dot: webdataset's key is all before it
                members = [(f"{key}.{ext}", self.staged(name)), (f"{key}.json", json.dumps(meta, sort_keys=True).encode())]
                if caption is not None:  # open_clip reads the caption from `txt`, as img2dataset writes it
                    members.append((f"{key}.txt", caption.encode("utf-8")))
                for member, data in members:
                    info = tarfile.TarInfo(member)
                    info.size, info.mode, info.mtime = len(data), 0o644, 0
                    tar.addfile(info, io.BytesIO(data))
        return sink.getvalue()


def read_previous_images(format: str, root: str, index: int, data_path: str, ids: list[str]) -> dict[str, bytes]:
    """The stored bytes of a finished shard's rows (for --retry-failed to stage again), by id."""
    if format == "parquet":
        table = storage.read_parquet(data_path, columns=["id", "image_bytes"])
        return {i: b for i, b in zip(table.column("id").to_pylist(), table.column("image_bytes").to_pylist())
                if b is not None}
    if format == "webdataset":
        wanted = {file_name(i): i for i in ids}
        found = {}
        with tarfile.open(fileobj=io.BytesIO(storage.read_bytes(
                storage.join(root, "webdataset", f"shard-{index:05d}.tar")))) as tar:
            for member in tar.getmembers():
                key, ext = member.name.rsplit(".", 1)
                if ext != "json" and key in wanted:
                    found[wanted[key]] = tar.extractfile(member).read()
        return found
    return {}
