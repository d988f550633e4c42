"""`score` output as an evaluation input: the run folder or its scores table is read directly, pairs
the score stage refused (status rejected) are left out and counted, and pairs an importer tied to one
item (`item_id`, and `score_as` naming the metric's column, e.g. caption_score / foil_score) are put
back on one row per item. An item with any refused pair is left out whole: half an item has no answer."""
from __future__ import annotations

import glob
import os
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from xmdata.schemas.contract import ContractError

SCORE_RUN_DATA = os.path.join("clip_score", "data")
PER_PAIR = {"id", "text", "image_path", "status", "error_message", "clip_score", "ref_clip_score",
            "text_truncated", "refs_truncated", "score_as", "image_embedding", "text_embedding", "refs"}


def read_score_run(folder: str) -> pa.Table | None:
    """A `score` run folder's scores (every shard, in shard order), or None when it is no such folder."""
    shards = sorted(glob.glob(os.path.join(folder, SCORE_RUN_DATA, "shard-*.parquet")))
    if not shards:
        return None
    return pa.concat_tables([pq.read_table(p) for p in shards], promote_options="permissive")


def scored_rows(table: pa.Table, source: str) -> tuple[pa.Table, dict]:
    """(rows a metric can use, what was left out and why). Tables that are no score output pass as they are."""
    left_out: dict = {}
    if "status" in table.column_names and "clip_score" in table.column_names:
        refused = pc.fill_null(pc.not_equal(table.column("status"), "ok"), True)
        if pc.any(refused).as_py():
            messages = table.filter(refused).column("error_message").to_pylist()
            left_out["rejected_pairs"] = int(pc.sum(refused).as_py())
            left_out["by_message"] = dict(Counter(str(m).split(":")[0] for m in messages).most_common())
            table = table.filter(pc.invert(refused))
    if {"item_id", "score_as", "clip_score"} <= set(table.column_names):
        table, incomplete = items_from_pairs(table, source)
        if incomplete:
            left_out["incomplete_items"] = incomplete
    return table, left_out


def items_from_pairs(table: pa.Table, source: str) -> tuple[pa.Table, int]:
    """One row per item: `<score_as>` = its pair's clip_score, plus the columns its pairs agree on."""
    keep = [c for c in table.column_names if c not in PER_PAIR or c == "score_as"]
    rows = table.select(keep + ["clip_score"]).to_pylist()
    roles = sorted(set(table.column("score_as").to_pylist()))
    items: dict[str, dict] = {}
    for row in rows:
        item = items.setdefault(row["item_id"], {"_pairs": []})
        item["_pairs"].append(row)
    out, incomplete = [], 0
    for item_id, item in items.items():
        pairs = item["_pairs"]
        scores = {p["score_as"]: p["clip_score"] for p in pairs}
        if set(scores) != set(roles) or len(pairs) != len(roles):
            incomplete += 1  # a pair was refused by the score stage, or the item repeats a role
            continue
        shared = {c: pairs[0][c] for c in keep if c != "score_as" and all(p[c] == pairs[0][c] for p in pairs)}
        out.append({"id": item_id, **shared, **scores})
    if not out:
        raise ContractError(f"{source}: no item has a scored pair for each of {', '.join(roles)}")
    return pa.Table.from_pylist(out), incomplete
