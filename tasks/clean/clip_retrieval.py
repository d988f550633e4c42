"""A clip-retrieval embeddings folder as a reference: read it part by part, memory-mapped, never whole.

The layout, as clip-retrieval's own writer makes it — verified against github.com/rom1504/clip-retrieval
at commit b05533561e801db4fcfb5af0743321e8654f2f01 (2025-08-16), files
clip_retrieval/clip_inference/writer.py (OutputSink), mapper.py (ClipMapper), reader.py, main.py:

  FOLDER/img_emb/img_emb_N.npy        np.save of one (rows, dim) matrix a partition (image embeddings)
  FOLDER/text_emb/text_emb_N.npy      the same for text embeddings
  FOLDER/metadata/metadata_N.parquet  pandas to_parquet, one row an embedding row, same order

- N is the partition id, zero-padded to int(log10(partition_count)) + 1 digits (writer.py:
  `str(batch_num).zfill(oom_partition_count)`): 10 partitions are `00`..`09`, 100 are `000`..`099`.
  Older folders (LAION-400M's) are unpadded, so parts are put in numeric order of N, never by name.
  A partition with no rows writes nothing (`flush` returns when batch_count is 0): ids can have gaps.
- Vectors are L2-normalised then cast to float16 (mapper.py: `features /= features.norm(...)`,
  `.to(torch.float16)`); the multilingual-CLIP text path (`use_mclip`) normalises in numpy and keeps
  the model's dtype (float32), and maps a zero vector to zero. Both dtypes are read here.
- Metadata columns: `image_path` (image enabled: the file path, or the webdataset `__key__`),
  `caption` (text enabled), then the sample's JSON flattened (img2dataset's `key`, `url`, ...) when
  metadata is enabled. `match_id` is `key` where the column exists, else `image_path`.
- The folder records neither the model nor its dimension: the caller names the model and passes its
  dimension (`expected_dim`), and a folder of another dimension is refused.

A whole folder that breaks this layout raises ContractError (one line, naming the file): no
img_emb/text_emb, no rows, a part without its metadata, rows that do not line up, another dimension,
vectors that are not finite or not unit length (checked chunk by chunk as they are read).
"""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass
from typing import Iterator, Mapping, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.schemas import ContractError

FOLDERS = {"image": "img_emb", "text": "text_emb"}
ID_COLUMNS = ("key", "image_path")
DEFAULT_CHUNK_ROWS = 65_536  # 256 MiB of float32 at dimension 1024: one chunk converted for faiss
NORM_TOLERANCE = 0.01  # float16 rounding moves a unit norm by ~1e-3; clip-retrieval's zero vectors pass


@dataclass(frozen=True)
class EmbeddingsPart:
    npy: str
    metadata: str
    offset: int  # global row of the part's first row
    rows: int


@dataclass(frozen=True)
class EmbeddingsFolder:
    """Parts in numeric order of N; `ids[i]` is global row i's match_id. Holds paths, not arrays, so
    it pickles cheaply to a Dask worker, which memory-maps the parts it reads."""

    path: str
    kind: str
    parts: tuple[EmbeddingsPart, ...]
    ids: pa.Array
    dim: int
    dtype: np.dtype

    @property
    def rows(self) -> int:
        return self.parts[-1].offset + self.parts[-1].rows

    def __len__(self) -> int:
        return self.rows

    def chunks(self, chunk_rows: int = DEFAULT_CHUNK_ROWS, start: int = 0,
               stop: int | None = None) -> Iterator[tuple[int, np.ndarray]]:
        """(global offset, float32 block) for rows [start, stop), at most chunk_rows a block, never
        crossing a part; each block is checked (finite, unit length) as it is read."""
        stop = self.rows if stop is None else stop
        for part in self.parts:
            lo, hi = max(start, part.offset), min(stop, part.offset + part.rows)
            if lo >= hi:
                continue
            matrix = np.load(part.npy, mmap_mode="r")
            for a in range(lo, hi, chunk_rows):
                b = min(a + chunk_rows, hi)
                block = np.asarray(matrix[a - part.offset:b - part.offset], dtype=np.float32)
                check_unit_rows(block, part.npy, a - part.offset)
                yield a, block
            del matrix

    def gather(self, rows: np.ndarray) -> np.ndarray:
        """float32 vectors of the given global rows (sorted or not), read from the memory maps."""
        rows = np.asarray(rows, np.int64)
        out = np.empty((len(rows), self.dim), np.float32)
        offsets = np.array([p.offset for p in self.parts])
        which = np.searchsorted(offsets, rows, side="right") - 1
        for i in np.unique(which):
            part, mask = self.parts[i], which == i
            out[mask] = np.load(part.npy, mmap_mode="r")[rows[mask] - part.offset]
            check_unit_rows(out[mask], part.npy, 0)
        return out


def check_unit_rows(block: np.ndarray, source: str, first_row: int) -> None:
    if not np.isfinite(block).all():
        bad = first_row + int(np.flatnonzero(~np.isfinite(block).all(axis=1))[0])
        raise ContractError(f"{source}: row {bad}: the vector holds NaN or infinity")
    norms = np.linalg.norm(block, axis=1)
    off = (np.abs(norms - 1) > NORM_TOLERANCE) & (norms > 0)
    if off.any():
        bad = int(np.flatnonzero(off)[0])
        raise ContractError(f"{source}: row {first_row + bad}: the vector is not L2-normalised "
                            f"(norm {norms[bad]:.4f})")


def open_embeddings_folder(path: str, kind: str, expected_dim: int | None = None) -> EmbeddingsFolder:
    """Read the folder's layout and ids (not its vectors); refuse a folder that breaks the layout."""
    if kind not in FOLDERS:
        raise ValueError(f"kind must be one of {sorted(FOLDERS)}, not {kind!r}")
    name = FOLDERS[kind]
    folder = os.path.join(path, name)
    if not os.path.isdir(folder):
        present = [f + "/" for f in FOLDERS.values() if os.path.isdir(os.path.join(path, f))]
        raise ContractError(f"{path}: no {name}/ folder of {kind} embeddings (clip-retrieval layout; "
                            f"found {', '.join(present) or 'neither img_emb/ nor text_emb/'})")
    pattern = re.compile(rf"^{name}_(\d+)\.npy$")
    numbered = sorted((int(m.group(1)), m.group(1), f) for f in os.listdir(folder) if (m := pattern.match(f)))
    if not numbered:
        raise ContractError(f"{folder}: no {name}_N.npy file")
    repeated = [f for (n, _, f), (m, _, _) in zip(numbered[1:], numbered) if n == m]
    if repeated:
        raise ContractError(f"{os.path.join(folder, repeated[0])}: partition number repeated under another padding")
    parts, ids, dim, dtype, offset = [], [], expected_dim, None, 0
    for _, digits, filename in numbered:
        npy = os.path.join(folder, filename)
        meta = os.path.join(path, "metadata", f"metadata_{digits}.parquet")
        try:
            matrix = np.load(npy, mmap_mode="r")
        except (ValueError, OSError) as error:
            raise ContractError(f"{npy}: not a readable .npy matrix ({error})") from None
        if matrix.ndim != 2 or matrix.dtype not in (np.float16, np.float32):
            raise ContractError(f"{npy}: expected a 2-D float16 or float32 matrix, "
                                f"found {matrix.ndim}-D {matrix.dtype}")
        if dim is None:
            dim, dtype = matrix.shape[1], matrix.dtype
        if matrix.shape[1] != dim:
            source = "the model's" if expected_dim is not None else "the first part's"
            raise ContractError(f"{npy}: dimension {matrix.shape[1]}, not {source} {dim}")
        dtype = dtype or matrix.dtype
        if not os.path.exists(meta):
            raise ContractError(f"{npy}: no metadata file {meta} beside it")
        schema = pq.read_schema(meta)
        column = next((c for c in ID_COLUMNS if c in schema.names), None)
        if column is None:
            raise ContractError(f"{meta}: no 'key' or 'image_path' column to name the rows "
                                f"(columns: {', '.join(schema.names)})")
        part_ids = pq.read_table(meta, columns=[column]).column(column).combine_chunks().cast(pa.string())
        if len(part_ids) != matrix.shape[0]:
            raise ContractError(f"{meta}: {len(part_ids)} rows, but {npy} has {matrix.shape[0]} vectors")
        parts.append(EmbeddingsPart(npy, meta, offset, matrix.shape[0]))
        ids.append(part_ids)
        offset += matrix.shape[0]
        del matrix
    if offset == 0:
        raise ContractError(f"{folder}: the {name}_N.npy files hold no rows")
    return EmbeddingsFolder(path, kind, tuple(parts), pa.concat_arrays(ids), int(dim), np.dtype(dtype))


def part_name(partition: int, partition_count: int) -> str:
    """N as the writer spells it: zero-padded to int(log10(partition_count)) + 1 digits."""
    return str(partition).zfill(int(math.log10(partition_count)) + 1)


def write_embeddings_part(path: str, partition: int, partition_count: int, vectors: np.ndarray,
                          metadata: Mapping[str, Sequence], kind: str = "image") -> None:
    """One partition as clip-retrieval's writer lays it out (for tests and the bench): the .npy under
    img_emb/ or text_emb/, its metadata row for row (columns as given: image_path, caption, key…)."""
    digits = part_name(partition, partition_count)
    name = FOLDERS[kind]
    os.makedirs(os.path.join(path, name), exist_ok=True)
    os.makedirs(os.path.join(path, "metadata"), exist_ok=True)
    np.save(os.path.join(path, name, f"{name}_{digits}.npy"), vectors)
    pq.write_table(pa.table(dict(metadata)), os.path.join(path, "metadata", f"metadata_{digits}.parquet"))


def write_embeddings_folder(path: str, parts: Sequence[tuple[np.ndarray, Mapping[str, Sequence]]],
                            kind: str = "image") -> None:
    """Every partition in turn, numbered 0..len(parts)-1 like the writer's partition ids."""
    for partition, (vectors, metadata) in enumerate(parts):
        write_embeddings_part(path, partition, len(parts), vectors, metadata, kind)
