"""Any local Hugging Face dataset — a `save_to_disk` folder, a hub snapshot of Parquet (or JSON/JSONL)
files, or one such file — as one table with its `split`, renamed by --map and, with --table, checked
against that contract. Columns are kept as they are; nothing is dropped."""
from __future__ import annotations

import os

import pyarrow as pa

from xmdata.schemas import CONTRACTS
from xmdata.schemas.column_map import apply_active_map
from xmdata.schemas.contract import ContractError

from .base import Imported, normalise_languages
from .hf_files import layout_of, read_splits
from .options import ImportOptions


def read_hf(source: str, options: ImportOptions) -> Imported:
    if options.table and options.table not in CONTRACTS:
        raise ContractError(f"--table {options.table!r}: unknown; known: {', '.join(sorted(CONTRACTS))}")
    splits = read_splits(source)
    wanted = [s.strip() for s in (options.subsets or "").split(",") if s.strip()]
    unknown = sorted(set(wanted) - set(splits))
    if unknown:
        raise ContractError(f"hf: --subsets names {', '.join(unknown)}; splits here: {', '.join(splits)}")
    chosen = {name: t for name, t in splits.items() if not wanted or name in wanted}
    parts = [apply_active_map(t, source).append_column("split", pa.array([name] * t.num_rows, pa.string()))
             if "split" not in t.column_names else apply_active_map(t, source) for name, t in chosen.items()]
    table = normalise_languages(pa.concat_tables(parts, promote_options="permissive"), source)
    name = options.table or "table"
    layout = layout_of(source) if os.path.isdir(source) else f"one {source.rsplit('.', 1)[-1]} file"
    return Imported({name: (table, CONTRACTS.get(options.table))}, layout, sum(t.num_rows for t in splits.values()),
                    notes={"splits": {n: t.num_rows for n, t in chosen.items()}})
