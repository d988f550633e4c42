"""MMEB-train (TIGER-Lab/MMEB-train, the xVLM2Vec training source): a folder per subset, each a hub
snapshot (`original-00000-of-00001.parquet`, `diverse_instruction-…parquet`), JSON/JSONL files or a
`datasets` save, with columns qry, qry_image_path, pos_text, pos_image_path, neg_text, neg_image_path.
Every instance becomes a qa_input row with task = subset; every image path and column is kept."""
from __future__ import annotations

import os

from xmdata.schemas.column_map import apply_active_map
from xmdata.schemas.contract import ContractError
from xmdata.schemas.translation import QA_INPUT

from .base import Imported, layout_error, reject, rows_table
from .hf_files import count_rows, data_files, layout_of, read_split, split_files
from .options import ImportOptions

FORMAT = "mmeb-train"
REQUIRED = ("qry", "qry_image_path", "pos_text", "pos_image_path")
EXPECTED = "a folder per subset with columns qry, qry_image_path, pos_text, pos_image_path[, neg_text, neg_image_path]"


def subset_folders(source: str, wanted: list[str]) -> dict[str, str]:
    """Subset folders by name: those holding data files (the hub clone's images/ and images_zip/ hold none)."""
    folders = {n: os.path.join(source, n) for n in sorted(os.listdir(source)) if os.path.isdir(os.path.join(source, n))
               and not n.startswith(".") and data_files(os.path.join(source, n))} if os.path.isdir(source) else {}
    if not folders:  # SOURCE is one subset (a folder of files, or one file)
        folders = {os.path.basename(os.path.normpath(source)).rsplit(".", 1)[0]: source}
    unknown = sorted(set(wanted) - set(folders))
    if unknown:
        raise ContractError(f"{FORMAT}: --subsets names {', '.join(unknown)}, not in {source} "
                            f"(subsets: {', '.join(folders)})")
    return {n: p for n, p in folders.items() if not wanted or n in wanted}


def _blank(value) -> bool:
    return value is None or (isinstance(value, str) and not value.strip())


def chosen_split(splits: list[str], wanted: str | None, folder: str) -> str:
    """One split a subset: the one asked for, else train (what xVLM2Vec read), else original, else the only one.
    The hub's current folders hold train, original (the same rows) and diverse_instruction: reading them
    all would put every instance in three times."""
    if wanted:
        if wanted not in splits:
            raise ContractError(f"{FORMAT}: {folder}: no split {wanted!r} (splits: {', '.join(splits)})")
        return wanted
    for name in ("train", "original"):
        if name in splits:
            return name
    if len(splits) == 1:
        return splits[0]
    raise ContractError(f"{FORMAT}: {folder}: splits {', '.join(splits)}; say which with --split")


def image_folder(source: str) -> str | None:
    """The hub clone's root when its unzipped images/ sits beside the subsets (qry_image_path = images/<Subset>/…)."""
    return os.path.abspath(source) if os.path.isdir(os.path.join(source, "images")) else None


def read_mmeb_train(source: str, options: ImportOptions) -> Imported:
    wanted = [s.strip() for s in (options.subsets or "").split(",") if s.strip()]
    rows, rejects, layouts, read, left = [], [], set(), 0, {}
    for subset, folder in subset_folders(source, wanted).items():
        splits = split_files(folder)  # only the split read is loaded: the others are counted from their footers
        split = chosen_split(sorted(splits), options.split, folder)
        left.update({f"{subset}/{name}": count_rows(paths) for name, paths in splits.items() if name != split})
        table = apply_active_map(read_split(folder, splits[split]), folder)
        missing = [c for c in REQUIRED if c not in table.column_names]
        if missing:
            raise layout_error(FORMAT, folder, EXPECTED, problem=f"split {split!r} has no {', '.join(missing)}; "
                               f"columns: {', '.join(table.column_names)}")
        layouts.add(layout_of(folder) if os.path.isdir(folder) else "one file")
        read += table.num_rows
        for index, record in enumerate(table.to_pylist()):
            row_id = f"{subset}/{split}/{index}"
            if _blank(record["qry"]) and _blank(record["qry_image_path"]):
                rejects.append(reject(FORMAT, "empty_query", [row_id]))
                continue
            if _blank(record["pos_text"]) and _blank(record["pos_image_path"]):
                rejects.append(reject(FORMAT, "empty_positive", [row_id]))
                continue
            ours = {"id": row_id, "task": subset, "query": record["qry"], "positive": record["pos_text"],
                    "negative": record.get("neg_text"), "image": record["qry_image_path"], "subset": subset,
                    "split": split}
            # every source column is kept; one that shares a name with ours as source_<name>
            rows.append({**{(f"source_{k}" if k in ours else k): v for k, v in record.items()}, **ours})
    table = rows_table(rows, QA_INPUT.schema)
    return Imported({"qa_input": (table, QA_INPUT)}, ", ".join(sorted(layouts)) or "empty", read, rejects,
                    notes={"subsets": sorted({r["task"] for r in rows}), "splits_not_read": left},
                    image_folder=None if options.images else image_folder(source))
