"""`score` output as an evaluation input: the run folder or its scores table is read directly, pairs
the score stage refused (status rejected) are left out and counted, and pairs an importer tied to one
item (`item_id`, and `score_as` naming the metric's column, e.g. caption_score / foil_score) are put
back on one row per item. An item with any refused pair is left out whole: half an item has no answer.
A run folder's rejects give the refused pairs' reasons."""
from __future__ import annotations

import glob
import os
from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from xmdata.schemas.contract import ContractError

SCORE_RUN = "clip_score"
PER_PAIR = {"id", "text", "image_path", "status", "error_message", "clip_score", "ref_clip_score",
            "text_truncated", "refs_truncated", "score_as", "image_embedding", "text_embedding", "refs"}


def read_score_run(folder: str) -> tuple[pa.Table, dict] | None:
    """A `score` run folder's scores (every shard, in shard order) and its refused pairs by reason,
    or None when it is no such folder."""
    def gather(kind: str) -> list[pa.Table]:
        return [pq.read_table(p) for p in sorted(glob.glob(os.path.join(folder, SCORE_RUN, kind, "shard-*.parquet")))]

    shards = gather("data")
    if not shards:
        return None
    reasons = Counter(r for t in gather("rejects") for r in t.column("reason").to_pylist())
    return pa.concat_tables(shards, promote_options="permissive"), dict(sorted(reasons.items()))


def scored_rows(table: pa.Table, source: str, reasons: dict | None = None) -> tuple[pa.Table, dict]:
    """(rows a metric can use, what was left out and why). Tables that are no score output pass as they are."""
    left_out: dict = {}
    if "status" in table.column_names and "clip_score" in table.column_names:
        refused = pc.fill_null(pc.not_equal(table.column("status"), "ok"), True)
        if pc.any(refused).as_py():
            left_out["rejected_pairs"] = int(pc.sum(refused).as_py())
            if reasons:
                left_out["by_reason"] = reasons
            if {"item_id", "score_as"} <= set(table.column_names):  # half an item has no answer: all of it goes
                items = pc.unique(table.filter(refused).column("item_id"))
                left_out["items_with_a_rejected_pair"] = len(items)
                refused = pc.or_(refused, pc.is_in(table.column("item_id"), items))
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
    items: dict[str, list[dict]] = {}
    for row in rows:
        items.setdefault(row["item_id"], []).append(row)
    complete = {k: pairs for k, pairs in items.items()
                if sorted(p["score_as"] for p in pairs) == roles}  # else a pair is missing or repeated
    if not complete:
        raise ContractError(f"{source}: no item has a scored pair for each of {', '.join(roles)}")
    # Item columns: those its pairs agree on, in every item (a pair's own text or image is no item fact).
    shared = [c for c in keep if c != "score_as" and all(p[c] == pairs[0][c] for pairs in complete.values()
                                                         for p in pairs)]
    out = [{"id": item_id, **{c: pairs[0][c] for c in shared}, **{p["score_as"]: p["clip_score"] for p in pairs}}
           for item_id, pairs in complete.items()]
    types = {c: table.schema.field(c).type for c in shared}
    return pa.Table.from_pylist(out, schema=pa.schema([pa.field("id", pa.string()), *types.items(),
                                                       *((r, pa.float64()) for r in roles)])), len(items) - len(complete)
