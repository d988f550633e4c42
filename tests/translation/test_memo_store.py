"""The memo of model work on an object store (a real S3 server, SeaweedFS on 127.0.0.1): what a
multi-host cluster's workers share. Entries are written and served as on a local folder, lookups
read the entry files that hold wanted keys (never an object a key), and stats and prune work there."""
from __future__ import annotations

import pyarrow as pa
import pytest

from support.memo_runs import parquet_bytes, run_shard as run

from xmdata.runtime import memo, storage
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import MEMO_KIND, translate_stage

TEXTS = [f"The dog {i} runs." for i in range(8)] + ["A cat sleeps on the warm mat near the door."]


@pytest.fixture
def on_the_store(s3, monkeypatch):
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    return s3


def test_a_memo_on_an_object_store_serves_the_same_bytes_and_reads_files_not_keys(tiny_models, on_the_store,
                                                                                   monkeypatch):
    stage = translate_stage(TranslateParams(targets=["fr"], translator={"num_beams": 4, "num_candidates": 2}),
                            tiny_models["m2m100"])
    table = pa.table({"id": [f"r{i}" for i in range(len(TEXTS))], "text": TEXTS})
    location = "s3://xmdata/memo-store-test"
    off_kept, off_rejects, _ = run(stage, table, None)
    _, _, first = run(stage, table, location)
    assert first == {MEMO_KIND: {"computed": len(TEXTS), "stored": len(TEXTS)}}

    reads: list[str] = []
    read = storage.read_parquet
    monkeypatch.setattr(storage, "read_parquet", lambda path, **kw: reads.append(path) or read(path, **kw))
    kept, rejects, second = run(stage, table, location)
    assert second == {MEMO_KIND: {"served": len(TEXTS)}}
    assert parquet_bytes(kept) == parquet_bytes(off_kept) and parquet_bytes(rejects) == parquet_bytes(off_rejects)
    files = {e.path for e in memo.entry_files(location)}
    assert len(files) == 1 and len(reads) == 2 * len(files)  # the key column once, then the entries: per file

    assert memo.stats(location)["kinds"][MEMO_KIND]["entries"] == len(TEXTS)
    assert memo.prune(location, everything=True)["removed_files"] == 1
    assert memo.entry_files(location) == []
    _, _, after = run(stage, table, location)  # a pruned entry is computed again
    assert after[MEMO_KIND]["computed"] == len(TEXTS)
