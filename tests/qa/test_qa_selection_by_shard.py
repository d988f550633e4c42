"""QA selection shard by shard: the whole-table selection's files whatever the shard plan, with a few
rows in memory at a time (the merge's budget set to tens of rows here)."""
from __future__ import annotations

import zlib

import numpy as np
import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.runtime import parquet_shards
from xmdata.runtime.atomic import write_parquet_atomic
from xmdata.schemas.translation import QA_CANDIDATES
from xmdata.tasks.build import sorted_merge
from xmdata.tasks.qa.outputs import count_outcomes, parallel_table, select_candidates, write_qa_outputs
from xmdata.tasks.translation.params import TranslateQaParams

TARGETS = ["fr", "de"]
SELECTION = {"vqa": {"rows": 80, "excluded": 0, "over_cap": 0, "selected": 80}}


def _candidates(instances: int = 80, seed: int = 3) -> pa.Table:
    """Two beams an instance and target, query and positive parts; failed extractions, wrong labels,
    QE from a few values (ties between beams)."""
    rng = np.random.default_rng(seed)
    rows = []
    for n in range(instances):
        for target in TARGETS:
            for rank in range(2):
                status = "ok" if rng.random() < 0.6 else "label_missing"
                for part in ("query", "positive"):
                    label = target if rng.random() < 0.85 else "en"
                    ok = status == "ok"
                    rows.append(dict(id=f"q{n:03d}", task="vqa", part=part, source_text=f"{part} {n}",
                                     target_language=target, image=f"img{n}.jpg", flattened_newlines=0,
                                     status=status, candidate=f"{target} {part} {n} {rank}" if ok else None,
                                     beam_rank=rank, sequence_score=-0.1 * rank, output=f"out {n} {rank}",
                                     lid_label=label if ok else None, lid_prob=float(rng.choice([0.4, 0.9])) if ok else None,
                                     lid_label_raw=label if ok else None, lid_match=(label == target) if ok else None,
                                     qe_score=float(rng.choice([0.25, 0.5, 0.75])) if ok and label == target else None))
    order = rng.permutation(len(rows))
    return pa.Table.from_pylist([rows[i] for i in order], schema=QA_CANDIDATES.schema)


def _shards(folder, candidates: pa.Table, shards: int) -> list[str]:
    folder.mkdir()
    which = np.array([zlib.crc32(i.encode()) % shards for i in candidates["id"].to_pylist()])
    paths = [str(folder / f"{s:05d}.parquet") for s in range(shards + 1)]  # the last one empty
    for shard, path in enumerate(paths):
        pq.write_table(candidates.filter(pa.array(which == shard)), path)
    return paths


@pytest.mark.parametrize("filters", [None, {"min_lid_prob": 0.5, "min_qe": 0.5}])
def test_qa_shard_by_shard_writes_what_the_whole_table_gives_whatever_the_plan(filters, tmp_path, monkeypatch):
    monkeypatch.setattr(sorted_merge, "ROWS_IN_MEMORY", 30)
    monkeypatch.setattr(sorted_merge, "ROW_GROUP", 8)
    monkeypatch.setattr(parquet_shards, "TOGETHER_ROWS", 60)  # shards of ~60-600 candidates: each alone
    params = TranslateQaParams(targets=TARGETS, filters=filters)
    candidates = _candidates()
    passthrough = pa.table({"id": [f"q{n:03d}" for n in range(80)], "split": [f"s{n % 3}" for n in range(80)]})
    outs = {}
    for plan in (1, 4, 11):
        outs[plan] = tmp_path / f"out-{plan}"
        write_qa_outputs(str(outs[plan]), _shards(tmp_path / f"shards-{plan}", candidates, plan), params,
                         {}, SELECTION, passthrough)
    # The whole table at once, with the selection's own functions:
    scored = filters is not None
    kept, refused = select_candidates(pl.from_arrow(candidates), scored, *((0.5, 0.5) if scored else (0.0, None)))
    write_parquet_atomic(parallel_table(kept, "en", passthrough), str(tmp_path / "whole.parquet"))
    assert (outs[4] / "qa_parallel.parquet").read_bytes() == (tmp_path / "whole.parquet").read_bytes()
    assert kept.height > 20 and refused.height > 5
    counts = pl.read_parquet(outs[4] / "qa_counts.parquet")
    assert counts.equals(count_outcomes(kept, refused).cast({"instances": counts["instances"].dtype}))
    rejects = pl.read_parquet(outs[4] / "qa_rejects.parquet")
    assert rejects["row_id"].to_list() == refused["id"].to_list()
    assert rejects["reason"].to_list() == refused["reason"].to_list()
    for plan in (1, 11):
        for name in ("qa_parallel.parquet", "qa_rejects.parquet", "qa_counts.parquet", "qa_report.json", "qa_report.md"):
            assert (outs[plan] / name).read_bytes() == (outs[4] / name).read_bytes(), (plan, name)
