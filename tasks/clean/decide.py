"""Select second: from the matches alone (no model), which rows a clean set keeps.

Dedup: rows joined by any match form a group (connected components, so a chain a~b~c is one group);
each group keeps its representative, the first of its ids in code-point order (stable whatever the
shard plan, the input order or the method that found the pair), and every other member is refused as
`near_duplicate` with its representative as the value. Contamination: every row with a match is
refused as `contaminated`, the value naming its best match as `<source>:<match_id>`.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.tasks.build.rejects import make_rejects, no_rejects

NEAR_DUPLICATE = "near_duplicate"
CONTAMINATED = "contaminated"


def duplicate_groups(matches: pa.Table) -> dict[str, str]:
    """{member: representative} for every row in a group of two or more (union-find over the pairs)."""
    parent: dict[str, str] = {}

    def root(x: str) -> str:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in zip(matches.column("id").to_pylist(), matches.column("match_id").to_pylist()):
        ra, rb = root(a), root(b)
        if ra != rb:  # the smaller id becomes the root, so the root is the group's first id
            parent[max(ra, rb)] = min(ra, rb)
    return {member: root(member) for member in parent}


def dedup_decisions(table: pa.Table, matches: pa.Table, stage: str) -> tuple[pa.Table, pa.Table, dict[str, str]]:
    """(kept rows, near_duplicate rejects, {member: representative}). A caption of the same image as its
    group's representative is kept beside it (two annotators' captions of one photo are no duplicates,
    even when a chain through another image's caption joins them)."""
    groups = duplicate_groups(matches)
    image_of = dict(zip(table.column("id").to_pylist(), table.column("image_id").to_pylist())) \
        if "image_id" in table.column_names else {}
    refused = sorted(m for m, r in groups.items()
                     if m != r and (image_of.get(m) is None or image_of.get(m) != image_of.get(r)))
    if not refused:
        return table, no_rejects(), groups
    mask = pc.is_in(table.column("id"), pa.array(refused, pa.string()))
    return table.filter(pc.invert(mask)), make_rejects(stage, NEAR_DUPLICATE, refused, [groups[m] for m in refused]), groups


def contamination_decisions(table: pa.Table, matches: pa.Table, stage: str) -> tuple[pa.Table, pa.Table]:
    """(kept rows, contaminated rejects naming each row's best match)."""
    if not matches.num_rows:
        return table, no_rejects()
    best = matches.sort_by([("id", "ascending"), ("score", "descending"), ("match_source", "ascending"),
                            ("match_id", "ascending")])
    first: dict[str, str] = {}
    for i, source, match in zip(best.column("id").to_pylist(), best.column("match_source").to_pylist(),
                                best.column("match_id").to_pylist()):
        first.setdefault(i, f"{source}:{match}")
    refused = sorted(first)
    mask = pc.is_in(table.column("id"), pa.array(refused, pa.string()))
    return table.filter(pc.invert(mask)), make_rejects(stage, CONTAMINATED, refused, [first[i] for i in refused])
