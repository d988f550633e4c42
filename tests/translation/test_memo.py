"""The memo of model work (runtime/memo.py) for beam candidates and COMETKiwi scores, on the tiny real
models: a shard assembled from entries and new results is the shard a memo-off build writes, to the
byte; every part of the key that decides a result makes a miss when it changes, and every part left
out is proven not to decide one; bad entries are computed again, never served."""
from __future__ import annotations

import dataclasses
import errno
import functools
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.memo_runs import parquet_bytes, run_shard as run

from xmdata.runtime import memo
from xmdata.runtime.execution import run_stage
from xmdata.runtime.session import execution_session
from xmdata.tasks.build import unit_memo
from xmdata.tasks.translation.candidate_scores import candidate_qe_stage
from xmdata.tasks.translation.options import FilterOptions
from xmdata.tasks.translation.params import TranslateParams
from xmdata.tasks.translation.translate import MEMO_KIND, translate_stage

GENERATION = dict(num_beams=4, num_candidates=2, batch_tokens=4096, max_new_tokens_ratio=1.0, max_new_tokens_extra=4)
# One length group: "The dog N runs." tokenises to the same length for every N below 10.
SAME_LENGTH = [f"The dog {i} runs." for i in range(8)]
LONG = " ".join(["house"] * 600)  # longer than the tiny translator takes: too_long, before the model


def texts_table(texts: list[str], ids: list[str] | None = None) -> pa.Table:
    return pa.table({"id": ids or [f"r{i}" for i in range(len(texts))], "text": texts})


def params(targets=("fr",), **translator) -> TranslateParams:
    return TranslateParams(targets=list(targets), translator={**GENERATION, **translator})


@pytest.fixture
def translate(tiny_models):
    return lambda **kw: translate_stage(params(**kw), tiny_models["m2m100"])


def test_hits_and_misses_in_one_length_group_give_the_memo_off_bytes(translate, tmp_path):
    """Half a length group from the memo, half computed in batches of their own, an empty text and a
    too-long one refused: the same candidates and rejects, in the same order, as without the memo."""
    texts = SAME_LENGTH + ["", LONG]
    off_kept, off_rejects, counts = run(translate(), texts_table(texts), None)
    assert counts == {}
    assert sorted(set(off_rejects.column("reason").to_pylist())) == ["empty_text", "too_long"]
    location = str(tmp_path / "memo")
    _, _, first = run(translate(), texts_table(SAME_LENGTH[::2]), location)  # every other one
    assert first == {MEMO_KIND: {"computed": 4, "stored": 4}}
    kept, rejects, second = run(translate(), texts_table(texts), location)
    assert second == {MEMO_KIND: {"served": 4, "computed": 4, "stored": 4}}
    assert parquet_bytes(kept) == parquet_bytes(off_kept)
    assert parquet_bytes(rejects) == parquet_bytes(off_rejects)
    _, _, third = run(translate(), texts_table(texts), location)
    assert third == {MEMO_KIND: {"served": 8}}  # no model call at all


def test_a_text_twice_in_a_shard_is_searched_once(translate, tmp_path):
    table = texts_table([SAME_LENGTH[0], SAME_LENGTH[1], SAME_LENGTH[0]], ids=["a", "b", "c"])
    off, _, _ = run(translate(), table, None)
    kept, _, counts = run(translate(), table, str(tmp_path / "memo"))
    assert counts[MEMO_KIND] == {"computed": 2, "stored": 2}
    assert parquet_bytes(kept) == parquet_bytes(off)
    by_id = {i: [] for i in "abc"}
    for row in kept.to_pylist():
        by_id[row["id"]].append(row["candidate"])
    assert by_id["a"] == by_id["c"] and len(by_id["a"]) > 0


def test_the_comparison_can_fail_an_entry_with_other_candidates_changes_the_bytes(translate, tmp_path):
    """The control: a well-formed entry whose candidates differ is served as they are, and the
    comparison above would catch it. (Only a stage changed without a version bump makes one:
    `--memo-audit` is the guard, tested below.)"""
    location = str(tmp_path / "memo")
    off, _, _ = run(translate(), texts_table(SAME_LENGTH[:2]), None)
    run(translate(), texts_table(SAME_LENGTH[:2]), location)
    rewrite_entries(location, lambda value: [["planted", 0, -1.0]])
    kept, _, counts = run(translate(), texts_table(SAME_LENGTH[:2]), location)
    assert counts[MEMO_KIND]["served"] == 2
    assert parquet_bytes(kept) != parquet_bytes(off)
    assert set(kept.column("candidate").to_pylist()) == {"planted"}
    with pytest.raises(memo.MemoAuditFailed, match="changed without a version bump"):
        run(translate(), texts_table(SAME_LENGTH[:2]), location, audit=1.0)


def rewrite_entries(location: str, change) -> None:
    """Every entry file rewritten with `change(value)` and a valid check: what a bug would store."""
    for folder, _, names in os.walk(location):
        for name in names:
            if name.endswith(".parquet"):
                path = os.path.join(folder, name)
                table = pq.read_table(path)
                keys = table.column("key").to_pylist()
                values = [memo.canonical(change(json.loads(v))) for v in table.column("value").to_pylist()]
                pq.write_table(pa.table({"key": keys, "value": pa.array(values, pa.binary()),
                                         "check": [memo.entry_check(k, v) for k, v in zip(keys, values)]}), path)


def test_a_bad_entry_or_file_is_computed_again_and_counted_never_served(translate, tmp_path):
    location = str(tmp_path / "memo")
    off, _, _ = run(translate(), texts_table(SAME_LENGTH[:4]), None)
    run(translate(), texts_table(SAME_LENGTH[:2]), location)
    run(translate(), texts_table(SAME_LENGTH[2:4]), location)
    files = sorted(os.path.join(d, n) for d, _, ns in os.walk(location) for n in ns if n.endswith(".parquet"))
    assert len(files) == 2
    open(files[0], "r+b").truncate(40)  # a torn file
    table = pq.read_table(files[1])  # an entry whose value no longer matches its check
    values = table.column("value").to_pylist()
    values[0] = values[0].replace(b'"', b"'", 1)
    pq.write_table(table.set_column(1, "value", pa.array(values, pa.binary())), files[1])
    kept, _, counts = run(translate(), texts_table(SAME_LENGTH[:4]), location)
    assert counts[MEMO_KIND]["served"] == 1 and counts[MEMO_KIND]["computed"] == 3
    assert counts[MEMO_KIND]["bad"] >= 1
    assert parquet_bytes(kept) == parquet_bytes(off)


def test_a_new_target_computes_that_target_only_and_excluded_fields_do_not_decide_a_unit(translate, tiny_models,
                                                                                        tmp_path):
    """Each field the key leaves out is changed here and the unit's candidates stay the same (the
    targets list, the text columns, sentence splitting and the model's path: its content is keyed)."""
    location = str(tmp_path / "memo")
    fr, _, _ = run(translate(targets=["fr"]), texts_table(SAME_LENGTH[:3]), location)
    both, _, counts = run(translate(targets=["fr", "ar"]), texts_table(SAME_LENGTH[:3]), location)
    assert counts[MEMO_KIND] == {"served": 3, "computed": 3, "stored": 3}  # ar only
    off, _, _ = run(translate(targets=["fr", "ar"]), texts_table(SAME_LENGTH[:3]), None)
    assert parquet_bytes(both) == parquet_bytes(off)
    only_fr = both.filter(pa.compute.equal(both.column("target_language"), "fr"))
    assert only_fr.column("candidate").to_pylist() == fr.column("candidate").to_pylist()
    _, _, removed = run(translate(targets=["ar"]), texts_table(SAME_LENGTH[:3]), location)
    assert removed[MEMO_KIND] == {"served": 3}  # removing a target computes nothing
    split = translate_stage(TranslateParams(targets=["fr"], columns=["caption"],
                                            translator={**GENERATION, "split_sentences": True}),
                            tiny_models["m2m100"])
    _, _, other = run(split, pa.table({"id": ["x"], "caption": [SAME_LENGTH[0]]}), location)
    assert other[MEMO_KIND] == {"served": 1}
    assert set(translate().memo_exclude) == {"target_languages", "columns", "split_sentences",
                                             "translator.name_or_path", "reply_rules"}  # an llm's: test_llm_translator.py


@pytest.mark.parametrize("change", ["num_beams", "num_candidates", "batch_tokens", "batch_size", "source", "stage_version",
                                    "platform", "kernels"])
def test_every_part_of_the_key_that_decides_a_result_misses_when_it_changes(translate, tiny_models, tmp_path,
                                                                          monkeypatch, change):
    location = str(tmp_path / "memo")
    run(translate(), texts_table(SAME_LENGTH[:2]), location)
    stage = {"num_beams": lambda: translate(num_beams=3), "num_candidates": lambda: translate(num_candidates=1),
             "batch_tokens": lambda: translate(batch_tokens=2048), "batch_size": lambda: translate(batch_size=1),
             "source": lambda: translate_stage(TranslateParams(targets=["fr"], source="de", translator=GENERATION),
                                               tiny_models["m2m100"])}.get(change, translate)()
    if change == "stage_version":
        import dataclasses

        stage = dataclasses.replace(stage, version=stage.version + "-next")
    if change == "kernels":  # what another CPU's kernels do, chosen by a variable (test_demo_build's OTHER_KERNELS)
        unit_memo.platform_facts.cache_clear()
        monkeypatch.setenv("ONEDNN_MAX_CPU_ISA", "SSE41")
        monkeypatch.setattr(unit_memo, "platform_facts", functools.cache(unit_memo.platform_facts.__wrapped__))
    if change == "platform":
        facts = unit_memo.platform_facts()
        monkeypatch.setattr(unit_memo, "platform_facts", lambda: {**facts, "platform": {**facts["platform"],
                                                                                        "cpu": "another"}})
    _, _, counts = run(stage, texts_table(SAME_LENGTH[:2]), location)
    assert counts[MEMO_KIND].get("served", 0) == 0 and counts[MEMO_KIND]["computed"] == 2


def test_a_thread_count_is_not_a_kernel_choice_a_shard_hits_wherever_it_ran(translate, tmp_path, monkeypatch):
    """The command's process sets MKL_NUM_THREADS to a worker's share (executors.use_worker_threads), a
    cluster's workers have their own: a unit computed in one is served in the other."""
    location = str(tmp_path / "memo")
    monkeypatch.setattr(unit_memo, "platform_facts", functools.cache(unit_memo.platform_facts.__wrapped__))
    monkeypatch.delenv("MKL_NUM_THREADS", raising=False)
    run(translate(), texts_table(SAME_LENGTH[:2]), location)
    unit_memo.platform_facts.cache_clear()
    monkeypatch.setenv("MKL_NUM_THREADS", "7")
    monkeypatch.setenv("OPENBLAS_NUM_THREADS", "3")
    _, _, counts = run(translate(), texts_table(SAME_LENGTH[:2]), location)
    assert counts[MEMO_KIND] == {"served": 2}


def test_a_model_replaced_at_the_same_path_misses_and_the_same_model_elsewhere_hits(tiny_models, tmp_path):
    model = tmp_path / "m2m100"
    shutil.copytree(tiny_models["m2m100"].name_or_path, model)
    stage = lambda path: translate_stage(params(), tiny_models["m2m100"].__class__(
        **{**tiny_models["m2m100"].to_dict(), "name_or_path": str(path)}))
    location = str(tmp_path / "memo")
    run(stage(model), texts_table(SAME_LENGTH[:2]), location)
    moved = tmp_path / "moved"
    shutil.copytree(model, moved)
    _, _, counts = run(stage(moved), texts_table(SAME_LENGTH[:2]), location)
    assert counts[MEMO_KIND] == {"served": 2}  # content, not path
    weights = next(p for p in sorted(model.iterdir()) if p.suffix in (".safetensors", ".bin"))
    data = bytearray(weights.read_bytes())
    data[-1] ^= 1  # one bit of the weights' last byte
    os.unlink(weights)
    weights.write_bytes(bytes(data))
    _, _, counts = run(stage(model), texts_table(SAME_LENGTH[:2]), location)
    assert counts[MEMO_KIND].get("served", 0) == 0


def test_qe_scores_are_served_by_pair_and_a_changed_qe_model_misses(tiny_models, tmp_path):
    candidates = pa.table({"id": ["a", "b", "c"], "source_text": SAME_LENGTH[:3], "candidate": ["Le chien.", "", "X"],
                           "lid_match": [True, True, False], "qe_score": pa.nulls(3, pa.float32())})
    qe = lambda **kw: candidate_qe_stage(FilterOptions(qe_model=tiny_models["cometkiwi"].name_or_path, **kw).qe_spec())
    location = str(tmp_path / "memo")
    off, off_rejects, _ = run(qe(), candidates, None)
    run(qe(), candidates.slice(0, 1), location)
    scored, rejects, counts = run(qe(), candidates, location)
    assert counts["cometkiwi"] == {"served": 1, "computed": 1, "stored": 1}
    assert parquet_bytes(scored) == parquet_bytes(off) and parquet_bytes(rejects) == parquet_bytes(off_rejects)
    _, _, other = run(qe(qe_batch_size=1), candidates, location)
    assert other["cometkiwi"].get("served", 0) == 0  # the batch shape is part of the key


def test_a_batch_that_ran_out_of_memory_is_not_stored(translate, tmp_path, monkeypatch):
    from xmdata.models.registry import get_model

    stage = translate()
    model = get_model("translator", stage.params.translator)
    real = model.predict

    def once_out_of_memory(batch, *args, calls=[]):
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("CUDA out of memory (planted)")
        return real(batch, *args)

    monkeypatch.setattr(model, "predict", once_out_of_memory)
    location = str(tmp_path / "memo")
    _, _, counts = run(stage, texts_table(SAME_LENGTH[:2]), location)
    assert counts[MEMO_KIND] == {"computed": 2}  # computed, halved, not stored


@pytest.mark.parametrize("error", [errno.ENOSPC, errno.EROFS, errno.EACCES])
def test_a_memo_that_cannot_be_written_is_read_and_not_written(translate, tmp_path, monkeypatch, caplog, error):
    """A full disk, a read-only file system, no permission (as root, where permissions stop nothing,
    the write is made to fail): the entries there are served, new results computed and not stored,
    said once; the build goes on."""
    from xmdata.runtime import atomic

    location = str(tmp_path / "memo")
    run(translate(), texts_table(SAME_LENGTH[:1]), location)

    def refuse(*args, **kwargs):
        raise OSError(error, os.strerror(error))

    writes = atomic.write_parquet_atomic
    monkeypatch.setattr(atomic, "write_parquet_atomic", refuse)
    command = memo.MemoOptions(location)  # two shards of one command share its store: said once
    with caplog.at_level("WARNING", logger="xmdata.memo"):
        kept, _, counts = run(translate(), texts_table(SAME_LENGTH[:3]), command)
        run(translate(), texts_table(SAME_LENGTH[:4]), command)
    assert counts[MEMO_KIND] == {"served": 1, "computed": 2}
    assert kept.num_rows > 0
    said = [r.getMessage() for r in caplog.records if r.name == "xmdata.memo"]
    assert len(said) == 1 and "new results are not stored" in said[0]
    monkeypatch.setattr(atomic, "write_parquet_atomic", writes)  # the disk freed: the next command's memo
    # is written again (the mark is its store's, not the process's)
    assert run(translate(), texts_table(SAME_LENGTH[:3]), location)[2][MEMO_KIND] == {"served": 1, "computed": 2,
                                                                                     "stored": 2}


def test_a_memo_folder_that_is_a_file_is_refused_in_one_line(tmp_path):
    from xmdata.schemas import ContractError

    (tmp_path / "memo").write_text("not a folder")
    with pytest.raises(ContractError, match="exists and is not a folder"):
        memo.check_location(str(tmp_path / "memo"))
    assert memo.check_location(str(tmp_path / "new" / "memo")) is None  # made on first write


def test_the_flow_with_a_new_shard_plan_and_appended_rows_computes_only_the_new_rows(tiny_models, tmp_path):
    """translate_texts end to end in this process: a memo-warm build of more rows on another shard
    plan writes every output byte-identical to a memo-off build, and runs the models on the new rows only."""
    from xmdata.flows.translate import translate_texts
    from xmdata.tasks.translation.outputs import CANDIDATES_FILE

    texts = [f"The dog {i} runs in the house." for i in range(20)] + ["", LONG]
    p = TranslateParams(targets=["fr", "ar"], translator={**GENERATION, "model": tiny_models["m2m100"].name_or_path},
                        filters={"qe_model": tiny_models["cometkiwi"].name_or_path, "lid_accept": "ar=ar,fr,en,hi"})
    names = [CANDIDATES_FILE, "translations.parquet", "translated.parquet", "translation_rejects.parquet",
             "translation_report.json"]

    def build(table, out, location, shards):
        with execution_session("inprocess"), memo.using(memo.MemoOptions(location)):
            reports, _, _ = translate_texts(table, str(out), shards, p)
        return {r.stage: r.timing.get("memo", {}) for r in reports}

    build(texts_table(texts), tmp_path / "off", None, 3)
    location = str(tmp_path / "memo")
    build(texts_table(texts[:18], ids=[f"r{i}" for i in range(18)]), tmp_path / "first", location, 2)
    used = build(texts_table(texts), tmp_path / "warm", location, 3)
    assert used["translate"][MEMO_KIND]["computed"] == 2 * 2  # two new texts, two targets
    assert used["translate"][MEMO_KIND]["served"] == 18 * 2  # the blank and the long one: refused before it
    for name in names:
        assert (tmp_path / "warm" / name).read_bytes() == (tmp_path / "off" / name).read_bytes(), name


def test_a_rebuild_computes_the_new_units_of_every_shard_in_shared_batches(tiny_models, tmp_path, monkeypatch):
    """New texts of one length that land in several shards are searched in one call per target (the
    gather, runtime/process.py), not in a filled call per shard; the output is the memo-off bytes.
    The control: with the gather off, the same rebuild makes a call per shard that holds a new text."""
    from xmdata.flows.translate import translate_texts
    from xmdata.runtime import execution
    from xmdata.tasks.translation import beam_search as beam_module
    from xmdata.tasks.translation.outputs import CANDIDATES_FILE

    # The new texts (one length group) are a few of each shard's units, as in a rebuild.
    texts = [f"A cat number {i} sleeps on the mat." for i in range(30)] + [f"The dog {i} runs." for i in range(10)]
    p = TranslateParams(targets=["fr"], translator={**GENERATION, "model": tiny_models["m2m100"].name_or_path},
                        filters={"qe_model": tiny_models["cometkiwi"].name_or_path, "lid_accept": "fr=fr,en"})
    calls: list[int] = []
    searched = beam_module.run_with_backoff
    monkeypatch.setattr(beam_module, "run_with_backoff", lambda items, *a, **k: calls.append(len(items)) or searched(items, *a, **k))

    def build(table, out, location):
        calls.clear()
        with execution_session("inprocess"), memo.using(memo.MemoOptions(location)):
            reports, _, _ = translate_texts(table, str(out), 3, p)
        return {r.stage: r for r in reports}["translate"]

    build(texts_table(texts), tmp_path / "off", None)
    location = str(tmp_path / "memo")
    build(texts_table(texts[:36]), tmp_path / "first", location)
    shutil.copytree(location, tmp_path / "memo-control")
    shutil.copytree(tmp_path / "first", tmp_path / "control")
    shutil.copytree(tmp_path / "first", tmp_path / "warm")

    warm = build(texts_table(texts), tmp_path / "warm", location)
    assert warm.shards_run >= 2, "the new texts must land in two shards or more for this test to mean anything"
    assert warm.timing["gathered"] == {**warm.timing["gathered"], "units": 4, "declined": False}
    assert warm.timing["memo"][MEMO_KIND]["computed"] == 4 and calls == [4]
    for name in [CANDIDATES_FILE, "translated.parquet", "translation_rejects.parquet"]:
        assert (tmp_path / "warm" / name).read_bytes() == (tmp_path / "off" / name).read_bytes(), name

    monkeypatch.setattr(execution, "_gather", lambda *a: None)
    control = build(texts_table(texts), tmp_path / "control", str(tmp_path / "memo-control"))
    assert control.timing["memo"][MEMO_KIND]["computed"] == 4 and len(calls) == control.shards_run == warm.shards_run
    assert (tmp_path / "control" / CANDIDATES_FILE).read_bytes() == (tmp_path / "off" / CANDIDATES_FILE).read_bytes()


def test_a_gather_declines_more_than_a_shards_worth_of_new_units(translate, tmp_path):
    """An empty memo, or a new target (new work in every shard): the gather stops at its lookup,
    before the model, and the shards compute the units side by side; a memo that holds them all
    serves them."""
    from xmdata.runtime.process import gather_new_units

    paths = []
    for i, chunk in enumerate([SAME_LENGTH[j:j + 2] for j in range(0, 8, 2)]):  # 4 shards of 2
        paths.append(str(tmp_path / f"shard-{i:05d}.parquet"))
        pq.write_table(texts_table(chunk, ids=[f"s{i}-{j}" for j in range(len(chunk))]), paths[-1])
    location = str(tmp_path / "memo")
    stage = dataclasses.replace(translate(targets=("fr",)), memo=memo.MemoOptions(location))
    first = gather_new_units(stage, paths)
    assert first["declined"] and first["fresh"] == [] and first["memo"] == {}  # an empty memo: all new
    for path in paths:
        run(stage, pq.read_table(path), location)
    again = gather_new_units(stage, paths)
    assert not again["declined"] and again["memo"] == {MEMO_KIND: {"served": 8}}
    added = dataclasses.replace(translate(targets=("fr", "ar")), memo=memo.MemoOptions(location))
    declined = gather_new_units(added, paths)  # 8 new of 16 over 4 shards: more than one shard's 4
    assert declined["declined"] and declined["fresh"] == [] and declined["memo"] == {MEMO_KIND: {"served": 8}}
