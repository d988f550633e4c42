"""`--memo` on a build and `xmdata memo stats|prune`: a second build of the same captions in a fresh
folder takes every candidate and score from the memo and says so; the memo is private to its user;
a memo that is a file, or a prune that names nothing to remove, is refused in one line."""
import json
import re
import os
import stat
import time

import pytest
from support.cli_in_process import run_xmdata

CAPTIONS = [{"id": f"c{i}", "text": f"A dog {i} runs on the grass."} for i in range(6)]


def translate(source, out, memo, models, env, *extra):
    return run_xmdata(["translate", source, "--targets", "fr", "--model", models["m2m100"].name_or_path,
                       "--qe-model", models["cometkiwi"].name_or_path, "--num-beams", "2", "--num-candidates", "2",
                       "--shards", "2", "--out", out, "--memo", memo, *extra], env)


def test_a_second_build_is_served_by_the_memo_and_says_so_and_prune_empties_it(tiny_models, cli_env, tmp_path):
    source = tmp_path / "captions.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in CAPTIONS), encoding="utf-8")
    memo = tmp_path / "memo"
    first = translate(source, tmp_path / "a", memo, tiny_models, cli_env)
    assert first.returncode == 0, first.stderr[-2000:]
    assert "memo: beam_candidates 0 served, 6 computed" in first.stdout
    assert stat.S_IMODE(os.stat(memo).st_mode) == 0o700  # results of the user's runs: the user's alone
    second = translate(source, tmp_path / "b", memo, tiny_models, cli_env)
    assert "memo: beam_candidates 6 served, 0 computed" in second.stdout
    qe_line = next(line for line in second.stdout.splitlines() if line.startswith("candidate_qe:"))
    assert re.search(r"cometkiwi \d+ served, 0 computed", qe_line) or "memo" not in qe_line, qe_line
    for name in ("translations.parquet", "translation_rejects.parquet", "translation_report.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()

    # explain ROW says where its model results came from, in each build
    def model_results(folder, stage):
        trace = json.loads(run_xmdata(["explain", folder, "c1", "--json"], cli_env).stdout)
        steps = [step for t in trace["traces"] for step in t["steps"] if step["stage"] == stage]
        return steps[0]["values"].get("model results")

    assert model_results(tmp_path / "a", "translate") == "0 of 1 from the memo (computed by an earlier build, " \
                                                       "the same bytes), 1 computed by this build"
    assert model_results(tmp_path / "b", "translate").startswith("1 of 1 from the memo")
    qe = model_results(tmp_path / "b", "candidate_qe")
    assert qe is None or " 0 computed by this build" in qe

    planned = run_xmdata(["translate", source, "--targets", "fr,de", "--model", tiny_models["m2m100"].name_or_path,
                          "--num-beams", "2", "--num-candidates", "2", "--out", tmp_path / "never", "--memo", memo,
                          "--dry-run"], cli_env)
    assert planned.returncode == 0, planned.stderr[-2000:]
    rows = {line.split()[0]: line.split()[1:] for line in planned.stdout.splitlines()[2:4]}
    assert rows == {"fr": ["6", "6", "0"], "de": ["6", "0", "6"]}, planned.stdout
    assert not (tmp_path / "never").exists()

    shown = run_xmdata(["memo", "stats", "--memo", memo, "--json"], cli_env)
    found = json.loads(shown.stdout)
    assert found["kinds"]["beam_candidates"]["entries"] == 6
    assert [run["out"] for run in found["recent_runs"]] == [str(tmp_path / "b"), str(tmp_path / "a")]
    assert found["recent_runs"][0]["stages"]["translate"]["beam_candidates"] == {"served": 6}
    text = run_xmdata(["memo", "stats", "--memo", memo], cli_env).stdout
    assert "beam_candidates" in text and "recent builds" in text

    assert run_xmdata(["memo", "prune", "--memo", memo, "--older-than", "1"], cli_env).stdout.count("removed 0") == 1
    pruned = run_xmdata(["memo", "prune", "--memo", memo, "--all"], cli_env)
    assert pruned.returncode == 0 and "0 left" in pruned.stdout
    assert json.loads(run_xmdata(["memo", "stats", "--memo", memo, "--json"], cli_env).stdout)["kinds"] == {}
    third = translate(source, tmp_path / "c", memo, tiny_models, cli_env, "--memo-audit", "0")
    assert "memo: beam_candidates 0 served, 6 computed" in third.stdout  # a pruned entry is computed again


@pytest.mark.parametrize("args, message", [
    (["memo", "prune", "--all"], "is not a folder"),
    (["memo", "prune"], "say what to remove"),
    (["memo", "stats"], "is not a folder"),
])
def test_memo_refusals_are_one_line(cli_env, tmp_path, args, message):
    (tmp_path / "file").write_text("x")
    memo = tmp_path / "file" if message == "is not a folder" else tmp_path / "memo"
    result = run_xmdata([*args, "--memo", memo], cli_env)
    assert result.returncode == 2
    assert result.stderr.strip().count("\n") == 0 and result.stderr.startswith("xmdata: error:") and message in result.stderr


def test_a_build_with_a_memo_that_is_a_file_is_refused_before_it_starts(cli_env, tmp_path):
    (tmp_path / "memo").write_text("x")
    result = run_xmdata(["identify-language", tmp_path / "in.csv", "--out", tmp_path / "out", "--memo",
                         tmp_path / "memo"], cli_env)
    assert result.returncode == 2 and "exists and is not a folder" in result.stderr
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("value", ["-0.1", "1.5", "nan"])
def test_the_audit_fraction_is_bounded_at_the_flag(cli_env, tmp_path, value):
    result = run_xmdata(["identify-language", tmp_path / "in.csv", "--out", tmp_path / "out", "--memo-audit", value],
                        cli_env)
    assert result.returncode == 2 and "--memo-audit" in result.stderr


def test_prune_keeps_what_named_outputs_used_and_removes_the_rest(tiny_models, cli_env, tmp_path):
    """Two builds of other captions share a memo; `prune --keep-used-by A` leaves A's entries (a
    rebuild of A computes nothing) and removes the ones only B used (a rebuild of B computes them)."""
    def source(name, rows):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        return path

    both = CAPTIONS[:3]
    a = source("a", both + [{"id": "a1", "text": "A red car stops at the light."}])
    b = source("b", both + [{"id": "b1", "text": "Two birds sit on the old wall."},
                            {"id": "b2", "text": "The child reads a long book."}])
    memo = tmp_path / "memo"
    for src, out in ((a, "a"), (b, "b")):
        assert translate(src, tmp_path / out, memo, tiny_models, cli_env).returncode == 0
    kinds = json.loads(run_xmdata(["memo", "stats", "--memo", memo, "--json"], cli_env).stdout)["kinds"]
    assert kinds["beam_candidates"]["entries"] == 6  # 3 shared, 1 of a's, 2 of b's

    (tmp_path / "empty").mkdir()
    assert translate(a, tmp_path / "off", "off", tiny_models, cli_env).returncode == 0  # use files, memo off
    for folder in (tmp_path / "empty", tmp_path / "off"):
        refused = run_xmdata(["memo", "prune", "--memo", memo, "--keep-used-by", tmp_path / "a", folder], cli_env)
        assert refused.returncode == 2 and "no record of memo use" in refused.stderr  # refused before anything goes
    assert json.loads(run_xmdata(["memo", "stats", "--memo", memo, "--json"], cli_env).stdout)["kinds"] == kinds
    recent = run_xmdata(["memo", "prune", "--memo", memo, "--keep-used-by", tmp_path / "a", "--json"], cli_env)
    assert json.loads(recent.stdout)["removed_entries"] == 0  # used within the hour: a build may need them now
    hours_ago = time.time() - 2 * 3600
    for entry in memo.rglob("*.parquet"):
        os.utime(entry, (hours_ago, hours_ago))

    pruned = run_xmdata(["memo", "prune", "--memo", memo, "--keep-used-by", tmp_path / "a", "--json"], cli_env)
    assert pruned.returncode == 0, pruned.stderr[-2000:]
    assert json.loads(pruned.stdout)["removed_entries"] >= 2  # b1 and b2 (and their QE scores)
    left = json.loads(run_xmdata(["memo", "stats", "--memo", memo, "--json"], cli_env).stdout)["kinds"]
    assert left["beam_candidates"]["entries"] == 4
    again_a = translate(a, tmp_path / "a2", memo, tiny_models, cli_env)
    assert "memo: beam_candidates 4 served, 0 computed" in again_a.stdout
    again_b = translate(b, tmp_path / "b2", memo, tiny_models, cli_env)
    assert "memo: beam_candidates 3 served, 2 computed" in again_b.stdout


def test_score_dry_run_counts_what_the_memo_holds_and_loads_no_model(tiny_models, cli_env, tmp_path):
    from PIL import Image

    for k, colour in enumerate([(200, 30, 30), (30, 200, 30)]):
        Image.new("RGB", (40, 30), colour).save(tmp_path / f"{k}.png")
    rows = [{"id": f"p{k}", "text": f"a thing number {k}", "image_path": f"{k % 2}.png"} for k in range(3)]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    spec = tiny_models["open_clip"]
    memo = tmp_path / "memo"
    args = ["score", pairs, "--clip-model", spec.name_or_path, "--pretrained", spec.option("pretrained"),
            "--memo", memo]

    def planned():
        result = run_xmdata([*args, "--out", tmp_path / "never", "--dry-run"], cli_env)
        assert result.returncode == 0, result.stderr[-2000:]
        return {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[2:4]}

    assert planned() == {"images": ["2", "0", "2"], "texts": ["3", "0", "3"]}
    assert not (tmp_path / "never").exists() and not memo.exists()
    built = run_xmdata([*args, "--out", tmp_path / "out"], cli_env)
    assert built.returncode == 0, built.stderr[-2000:]
    assert planned() == {"images": ["2", "2", "0"], "texts": ["3", "3", "0"]}

    def model_results(out):  # explain ROW says where the pair's embeddings came from
        trace = json.loads(run_xmdata(["explain", out, "p2", "--json"], cli_env).stdout)
        return [s["values"].get("model results") for t in trace["traces"] for s in t["steps"] if s["stage"] == "clip_score"]

    assert model_results(tmp_path / "out") == ["image embedding computed by this build, text embedding computed by this build"]
    again = run_xmdata([*args, "--out", tmp_path / "again"], cli_env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert model_results(tmp_path / "again") == ["image embedding from the memo (computed by an earlier build, the same "
                                                 "bytes), text embedding from the memo (computed by an earlier build, the same bytes)"]


def memo_file(top, kind: str, context: str, entries: dict[str, bytes], age_days: float):
    """An entry file as the memo writes one (MEMO/<kind>/<ab>/<context>/<content name>), last used AGE_DAYS ago."""
    from xmdata.runtime import memo
    from xmdata.runtime.atomic import write_parquet_atomic

    name, table = memo.entry_file(entries)
    path = top / kind / context[:2] / context / name
    path.parent.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(table, str(path))
    used = time.time() - age_days * 86400
    os.utime(path, (used, used))
    return path


def files_of(top) -> dict:
    return {p: p.read_bytes() for p in top.rglob("*") if p.is_file()}


def test_prune_dry_run_says_what_would_go_per_kind_and_removes_nothing(cli_env, tmp_path):
    top = tmp_path / "memo"
    beams = memo_file(top, "beam_candidates", "c1" * 20, {f"k{i}": b"v" * 50 for i in range(5)}, age_days=10)
    scores = memo_file(top, "clipscore", "d2" * 20, {f"s{i}": b"w" for i in range(3)}, age_days=10)
    memo_file(top, "clipscore", "d2" * 20, {"t0": b"x"}, age_days=0)
    before = files_of(top)
    prune = ["memo", "prune", "--memo", top, "--older-than", "1"]
    planned = run_xmdata([*prune, "--dry-run", "--json"], cli_env)
    assert planned.returncode == 0, planned.stderr[-2000:]
    found = json.loads(planned.stdout)
    assert found["going"] == {"beam_candidates": {"files": 1, "entries": 5, "bytes": beams.stat().st_size},
                              "clipscore": {"files": 1, "entries": 3, "bytes": scores.stat().st_size}}
    said = run_xmdata([*prune, "--dry-run"], cli_env).stdout
    assert said.startswith(f"dry run: nothing removed; memo {top}\n") and "would go: 8 entries" in said, said
    assert files_of(top) == before  # nothing removed, nothing written
    done = json.loads(run_xmdata([*prune, "--json"], cli_env).stdout)
    assert done == {k: v for k, v in found.items() if k not in ("dry_run", "going")}  # what it said would go went


def test_prune_dry_run_with_keep_used_by_counts_what_a_rewrite_would_drop(tmp_path):
    """A file holding some kept entries is written again with those only: the dry run says how many
    entries go and by how many bytes the file shrinks, as the real prune then does."""
    from xmdata.runtime import memo

    top = tmp_path / "memo"
    context = "e3" * 20
    old = memo_file(top, "beam_candidates", context, {f"k{i}": bytes([i]) * 200 for i in range(6)}, age_days=10)
    keep = {("beam_candidates", context): {"k0", "k1"}}
    size = old.stat().st_size
    planned = memo.prune(str(top), keep=keep, dry_run=True)
    assert old.exists() and len(list(top.rglob("*.parquet"))) == 1
    done = memo.prune(str(top), keep=keep)
    (left,) = top.rglob("*.parquet")
    assert planned["removed_entries"] == done["removed_entries"] == 4
    assert planned["going"] == {"beam_candidates": {"files": 0, "entries": 4, "bytes": size - left.stat().st_size}}
    assert planned["kept_bytes"] == done["kept_bytes"] == left.stat().st_size
