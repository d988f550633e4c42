"""The memo's folder layout and bytes (runtime/memo_keys.py), the same before and after the memo was
split by role: what the split's code writes is, to the byte, what the code before it wrote (pinned
below, measured at d2f5f1f); a memo folder made by hand from the layout alone, as an earlier build
left it, is read as before; a file of another layout is never served. And the entry store travels
with the options, not in the process."""
from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import pickle

import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.docs_code_size import LONG_FILE_LINES, lines
from xmdata.runtime import memo

STAGE, PARAMS = "xmdata-0.0/golden-1", {"beams": 4, "nested": {"x": [1, 2]}}
CONTEXT = {"models": [{"files": 1, "sha256": "ab" * 32}], "packages": {"x": "1"}}
CONTEXT_DIGEST = "0d3a652216d0052649365316d433ec230a5c8352c092b4055e7d19592c964aeb"
FOLDER = f"golden/0d/{CONTEXT_DIGEST}"
# What runtime/memo.py wrote at d2f5f1f (before the split) for the units of `write_golden`: path -> sha256.
BEFORE_THE_SPLIT = {
    f"{FOLDER}/context.json": "6db5bbf65fbd3c66a57182ad290c082797449b48052b82122073eda49dd1174c",
    f"{FOLDER}/d52e2515c3690007c07185579f8f97976cbef53c.parquet": "4a0a96065a95ac914259640445c979c58ee0fd488da2acb777ebc21b2d63a94a",
    f"{FOLDER}/ec528b7f745cdf06d7b709e6f0163f0ca11dfcba.parquet": "1fcfa2c5c34b5fded1ed981a45d422768ebdfbcf3bb9251e93d04522de9ed504",
}
INPUTS = [["A dog runs.", "en", "fr"], ["Ünïcode ✓", "en", "ar"], ["third", "en", "de"]]
VALUES = [[["Un chien court.", 0, -0.25]], [["مرحبا", 1, -1.5]], None]


def write_golden(location: str) -> memo.ShardScope:
    with memo.shard_scope(memo.MemoOptions(location), STAGE, PARAMS) as scope:
        unit_memo = memo.unit_memo("golden", CONTEXT)
        unit_memo.store(INPUTS[:2], VALUES[:2])
        unit_memo.flush()
        unit_memo.store(INPUTS[2:], VALUES[2:])
    return scope


def files_under(location: str) -> dict[str, str]:
    return {os.path.relpath(os.path.join(d, n), location).replace(os.sep, "/"):
            hashlib.sha256(open(os.path.join(d, n), "rb").read()).hexdigest()
            for d, _, names in os.walk(location) for n in names}


def test_the_memo_writes_the_paths_and_bytes_it_wrote_before_the_split(tmp_path):
    location = str(tmp_path / "memo")
    scope = write_golden(location)
    assert files_under(location) == BEFORE_THE_SPLIT
    use = memo.shard_use(scope)
    assert use["contexts"] == {"golden": [CONTEXT_DIGEST]} and use["served"] == {"golden": []}
    assert use["computed"] == {"golden": sorted(hashlib.sha256(memo.canonical(x)).hexdigest() for x in INPUTS)}
    assert memo.stats(location)["kinds"] == {"golden": {"contexts": 1, "files": 2, "entries": 3, "bytes": 3227}}


def hand_made_memo(location: str, entries: dict) -> str:
    """A memo folder as any earlier build left one, made from the layout alone (no memo code):
    MEMO/<kind>/<ab>/<sha256 of the context>/ with context.json and one Parquet file of (key, value,
    check) rows named by the first 40 hex of the sha256 of its keys and values."""
    whole = {"kind": "golden", "stage": STAGE, "params": PARAMS, **CONTEXT}
    encode = lambda obj: json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()  # noqa: E731
    digest = hashlib.sha256(encode(whole)).hexdigest()
    folder = os.path.join(location, "golden", digest[:2], digest)
    os.makedirs(folder)
    json.dump(whole, open(os.path.join(folder, "context.json"), "w"))
    keyed = sorted((hashlib.sha256(encode(x)).hexdigest(), encode(v)) for x, v in entries)
    name = hashlib.sha256(b"".join(k.encode() + v for k, v in keyed)).hexdigest()[:40] + ".parquet"
    pq.write_table(pa.table({"key": [k for k, _ in keyed], "value": pa.array([v for _, v in keyed], pa.binary()),
                             "check": [hashlib.sha256(k.encode() + b"\0" + v).hexdigest() for k, v in keyed]}),
                   os.path.join(folder, name))
    return folder


def test_a_memo_folder_from_before_the_split_is_read_as_before(tmp_path):
    """The layout did not change with the split: nothing to migrate. A folder made by hand from it
    serves its entries, and stats and prune count them."""
    location = str(tmp_path / "memo")
    folder = hand_made_memo(location, list(zip(INPUTS[:2], VALUES[:2])))
    with memo.shard_scope(memo.MemoOptions(location), STAGE, PARAMS) as scope:
        found = memo.unit_memo("golden", CONTEXT).lookup(INPUTS)
    assert found == [VALUES[0], VALUES[1], memo.MISSING]
    assert scope.counts["golden"].as_dict() == {"served": 2}
    assert memo.stats(location)["kinds"]["golden"]["entries"] == 2
    going = memo.prune(location, everything=True, dry_run=True)["going"]
    assert going == {"golden": {"files": 1, "entries": 2, "bytes": sum(os.path.getsize(os.path.join(folder, n))
                                                                        for n in os.listdir(folder) if n.endswith(".parquet"))}}


def test_an_entry_file_of_another_layout_is_counted_and_computed_never_served(tmp_path):
    """A file without the check column, and one whose check is of other bytes: both miss."""
    location = str(tmp_path / "memo")
    folder = hand_made_memo(location, [(INPUTS[0], VALUES[0])])
    key = hashlib.sha256(memo.canonical(INPUTS[1])).hexdigest()
    pq.write_table(pa.table({"key": [key], "value": pa.array([memo.canonical(VALUES[1])], pa.binary())}),
                   os.path.join(folder, "0" * 40 + ".parquet"))
    key = hashlib.sha256(memo.canonical(INPUTS[2])).hexdigest()
    pq.write_table(pa.table({"key": [key], "value": pa.array([b"1"], pa.binary()),
                             "check": [hashlib.sha256(b"other").hexdigest()]}), os.path.join(folder, "1" * 40 + ".parquet"))
    with memo.shard_scope(memo.MemoOptions(location), STAGE, PARAMS) as scope:
        found = memo.unit_memo("golden", CONTEXT).lookup(INPUTS)
    assert found == [VALUES[0], memo.MISSING, memo.MISSING]
    assert scope.counts["golden"].as_dict() == {"served": 1, "bad": 2}


def test_the_entry_store_travels_with_the_options_not_in_the_process(tmp_path):
    """One store per command's options, kept by `replace` (a gather's, the shards' `fresh`); options
    compare by their fields; a copy for another process knows nothing yet, and the next copy sent there
    shares what the first read (a worker's tasks); off has none."""
    location = str(tmp_path / "memo")
    write_golden(location)
    options = memo.MemoOptions(location)
    assert isinstance(options.store, memo.MemoStore) and options.store.location == location
    assert dataclasses.replace(options, fresh=frozenset({"k"})).store is options.store
    assert memo.MemoOptions(location).store is not options.store and memo.MemoOptions(location) == options
    with memo.shard_scope(options, STAGE, PARAMS):
        memo.unit_memo("golden", CONTEXT).lookup(INPUTS[:1])
    assert sum(len(keys) for keys in options.store.keys_by_file(os.path.join(location, FOLDER))[0].values()) == 3
    sent = pickle.loads(pickle.dumps(options))
    assert sent == options and sent.store is not options.store and sent.store.location == location
    assert sent.store.writable and sent.store.index.files == {}  # a new process knows nothing yet
    with memo.shard_scope(sent, STAGE, PARAMS):
        memo.unit_memo("golden", CONTEXT).lookup(INPUTS[:1])
    # The next task sent to that process (a Dask worker's) shares what the first read, not its flag.
    sent.store.mark_not_writable("the disk is full")
    again = pickle.loads(pickle.dumps(options))
    assert again.store is not sent.store and again.store.index is sent.store.index and again.store.writable
    assert sum(len(keys) for keys in again.store.index.files[os.path.join(location, FOLDER)].values()) == 3
    other = memo.MemoOptions(str(tmp_path / "other"))
    assert pickle.loads(pickle.dumps(other)).store.index is not again.store.index
    assert memo.MemoOptions(None).store is None


def test_each_task_a_worker_runs_counts_an_unreadable_file_and_reads_one_written_again(tmp_path):
    """A worker's tasks share its index of the files that read, not the unreadable ones: each task
    counts a truncated file as bad (as a new process does), and once that file is gone and written
    whole under its name, the next task reads it."""
    location = str(tmp_path / "memo")
    folder = hand_made_memo(location, [(INPUTS[0], VALUES[0])])
    broken = os.path.join(folder, "2" * 40 + ".parquet")
    with open(broken, "wb") as f:
        f.write(b"PAR1 truncated")
    options = memo.MemoOptions(location)
    for _ in range(2):  # two tasks sent to this process
        with memo.shard_scope(pickle.loads(pickle.dumps(options)), STAGE, PARAMS) as scope:
            assert memo.unit_memo("golden", CONTEXT).lookup(INPUTS[:2]) == [VALUES[0], memo.MISSING]
        assert scope.counts["golden"].as_dict() == {"served": 1, "bad": 1}
    task = pickle.loads(pickle.dumps(options))
    os.unlink(broken)
    task.store.keys_by_file(folder)  # lists it gone
    key = hashlib.sha256(memo.canonical(INPUTS[1])).hexdigest()
    value = memo.canonical(VALUES[1])
    pq.write_table(pa.table({"key": [key], "value": pa.array([value], pa.binary()),
                             "check": [memo.entry_check(key, value)]}), broken)
    with memo.shard_scope(task, STAGE, PARAMS) as scope:
        assert memo.unit_memo("golden", CONTEXT).lookup(INPUTS[:2]) == [VALUES[0], VALUES[1]]
    assert scope.counts["golden"].as_dict() == {"served": 2}


def test_every_file_of_the_memo_is_one_a_reader_can_hold_in_mind():
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    files = [n for n in os.listdir(os.path.join(root, "runtime")) if n.startswith("memo") and n.endswith(".py")]
    assert len(files) >= 6
    assert {n: lines(os.path.join(root, "runtime", n)) for n in files
            if lines(os.path.join(root, "runtime", n)) > LONG_FILE_LINES} == {}
