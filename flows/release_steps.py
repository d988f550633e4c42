"""Steps of a release build that run in the flow's process (imports, MMMEB assembly and embedding,
translation selection of a benchmark set), reported like a one-shard stage: counted rows in and out,
refusals by reason, and their rejects where gather_rejects finds a stage's."""
from __future__ import annotations

import os
from collections import Counter

import pyarrow as pa

from xmdata.runtime.atomic import write_parquet_atomic
from xmdata.runtime.process import StageReport


def step_report(stage: str, rows_in: int, rows_out: int, rejects: pa.Table, work: str) -> StageReport:
    """A step that runs in the flow process, reported like a one-shard stage (its rejects where a stage's go)."""
    write_parquet_atomic(rejects, os.path.join(work, stage, "rejects", "shard-00000.parquet"))
    reasons = dict(sorted(Counter(rejects.column("reason").to_pylist()).items()))
    return StageReport(stage, [{"rows_in": rows_in, "rows_out": rows_out, "rows_rejected": reasons}], 1, 0)
