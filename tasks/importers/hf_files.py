"""Local copies of Hugging Face datasets, read without importing `datasets`: a hub snapshot (Parquet
files named `<split>-00000-of-00001.parquet`, under `data/` or a folder per config), JSON/JSONL files,
or a `save_to_disk` folder (`state.json` + `data-*.arrow` in Arrow stream format; a DatasetDict has
`dataset_dict.json` and a folder per split)."""
from __future__ import annotations

import glob
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.schemas.contract import ContractError
from xmdata.schemas.readers import read_any

SHARD = re.compile(r"^(?P<split>.+?)-\d{5}-of-\d{5}$")
SUFFIXES = (".parquet", ".arrow", ".jsonl", ".json")


def _read_arrow(path: str) -> pa.Table:
    with open(path, "rb") as handle:
        try:
            return pa.ipc.open_stream(handle).read_all()  # what save_to_disk writes
        except pa.ArrowInvalid:
            handle.seek(0)
            return pa.ipc.open_file(handle).read_all()


def read_data_file(path: str) -> pa.Table:
    try:
        if path.endswith(".parquet"):
            return pq.read_table(path)
        if path.endswith(".arrow"):
            return _read_arrow(path)
    except (pa.ArrowException, OSError) as exc:
        raise ContractError(f"{path}: cannot read: {exc}") from exc
    return read_any(path)


def split_of(path: str, root: str) -> str:
    """`original-00000-of-00001.parquet` -> original; `train/data-00000-of-00001.arrow` -> train."""
    stem = os.path.basename(path).rsplit(".", 1)[0]
    match = SHARD.match(stem)
    name = match.group("split") if match else stem
    parent = os.path.dirname(path)
    if name == "data" and parent != root and os.path.exists(os.path.join(parent, "state.json")):
        return os.path.basename(parent)  # a DatasetDict's split folder
    return name


def data_files(folder: str) -> list[str]:
    """Every data file under the folder, in name order; dataset_info/state JSON files are metadata."""
    found = [p for p in glob.glob(os.path.join(folder, "**", "*"), recursive=True)
             if p.endswith(SUFFIXES) and os.path.basename(p) not in ("dataset_info.json", "state.json",
                                                                      "dataset_dict.json")]
    return sorted(found)


def layout_of(folder: str) -> str:
    if os.path.exists(os.path.join(folder, "dataset_dict.json")):
        return "datasets save_to_disk (DatasetDict)"
    if os.path.exists(os.path.join(folder, "state.json")):
        return "datasets save_to_disk (Dataset)"
    kinds = sorted({p.rsplit(".", 1)[1] for p in data_files(folder)})
    return "snapshot of " + "/".join(kinds) + " files"


def split_files(folder: str) -> dict[str, list[str]]:
    """{split: its files in name order} of a folder (or of one file), read from the names alone."""
    files = [folder] if os.path.isfile(folder) else data_files(folder)
    if not files:
        raise ContractError(f"{folder}: no data file ({', '.join(SUFFIXES)}) in this folder")
    splits: dict[str, list[str]] = {}
    for path in files:
        splits.setdefault(split_of(path, folder), []).append(path)
    return splits


def read_split(folder: str, paths: list[str]) -> pa.Table:
    """One split's shards, concatenated in name order."""
    try:
        return pa.concat_tables([read_data_file(p) for p in paths], promote_options="permissive")
    except pa.ArrowInvalid as exc:
        raise ContractError(f"{folder}: shards of one split disagree on their columns: {exc}") from exc


def count_rows(paths: list[str]) -> int:
    """Rows of a split's files: a Parquet file's from its footer, without reading its data."""
    return sum(pq.ParquetFile(p).metadata.num_rows if p.endswith(".parquet") else read_data_file(p).num_rows
               for p in paths)


def read_splits(folder: str) -> dict[str, pa.Table]:
    """{split: table} of a folder; shards of one split are concatenated in name order."""
    return {split: read_split(folder, paths) for split, paths in split_files(folder).items()}
