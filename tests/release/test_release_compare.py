"""`xmdata release compare A B`: two releases are the same data when their files, rows, ids, texts
and decisions are equal and their floats within the tolerance; the manifest records the platform
beside built_at, outside release_sha256."""
import json
import os
import platform
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata

from xmdata.runtime.atomic import write_json_atomic, write_parquet_atomic, write_text_atomic
from xmdata.tasks.release import manifest as manifest_module
from xmdata.tasks.release.compare import TOLERANCE, compare_releases
from xmdata.tasks.release.compare_files import SHOWN
from xmdata.tasks.release.compare_tables import KEYS
from xmdata.tasks.release.files import TABLES, sorted_by_values
from xmdata.tasks.release.manifest import verify_release, write_manifest

NULL_INT = pa.array([None] * 3, pa.int32())
RELEASE_TABLES = {
    "data/captions": pa.table({
        "id": ["cap-1", "cap-2", "cap-3"], "text": ["A dog runs.", "Un chat dort.", "Ein Haus."],
        "lid_label": ["en", "fr", "de"], "lid_prob": pa.array([0.9, 0.8, 0.7], pa.float32())}),
    "data/translations": pa.table({
        "id": ["cap-1", "cap-1", "cap-3"], "column": ["text"] * 3, "element": NULL_INT,
        "target_language": ["fr", "de", "fr"], "text": ["Un chien court.", "Ein Hund rennt.", None],
        "qe_score": pa.array([0.61, 0.52, None], pa.float32()), "status": ["ok", "ok", "rejected"]}),
    "data/images": pa.table({
        "language": ["fr", "fr", "de"], "image_id": ["img-1", "img-2", "img-1"],
        "latitude": [48.85, 43.3, 52.5], "level": ["region", "country", "region"]}),
    "data/clip_scores": pa.table({
        "id": [f"cap-{i:02d}" for i in range(25)], "clip_score": [i / 10 for i in range(25)]}),
    # Rejects: no float and no unique id (one row_id, several values), matched on every column.
    "rejects/translation_selection": pa.table({
        "stage": ["select_translations"] * 2, "reason": ["empty_text"] * 2, "row_id": ["cap-3"] * 2,
        "value": ["text -> de", "text -> fr"]}),
}


def build_release(root):
    """A small release written by the real writers: tables, a report, a card and the manifest."""
    for name, table in RELEASE_TABLES.items():
        write_parquet_atomic(sorted_by_values(table), str(root / f"{name}.parquet"))
    write_json_atomic({"stages": {"language_id": {"rows_in": 4, "kept": 3, "mean_lid_prob": 0.8}}},
                      str(root / "reports" / "summary.json"))
    write_text_atomic("# Card\n\n3 captions\n2 translations\n", str(root / "README.md"))
    (root / "build").mkdir()
    (root / "build" / "shard.parquet").write_bytes(b"work in progress: not part of the release")
    write_manifest(str(root), {"name": "t", "config": "name: t\n", "work_folder": "build"}, {"build"})
    return root


@pytest.fixture
def releases(tmp_path):
    a = build_release(tmp_path / "a")
    return a, shutil.copytree(a, tmp_path / "b")


def compare(a, b, *extra):
    return run_xmdata(["release", "compare", a, b, *extra], dict(os.environ))


def edit(release, table, where, column, change):
    """Set COLUMN of the row where WHERE holds to change(old value), rewritten as the release writes it."""
    path = str(release / f"{table}.parquet")
    data = pq.read_table(path)
    rows = data.to_pylist()
    hits = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(hits) == 1
    hits[0][column] = change(hits[0][column])
    write_parquet_atomic(sorted_by_values(pa.Table.from_pylist(rows, data.schema)), path)


def drop(release, table, column, value):
    path = str(release / f"{table}.parquet")
    data = pq.read_table(path)
    write_parquet_atomic(data.filter(pc.not_equal(data[column], value)), path)


def test_the_same_release_is_the_same_and_the_summary_counts_tables_rows_and_float_differences(releases):
    result = compare(*releases)
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    lines = result.stdout.splitlines()
    assert "data/captions.parquet: 3 rows, max float difference 0" in lines
    assert "rejects/translation_selection.parquet: 2 rows" in lines  # no float column
    assert lines[-1] == f"5 tables (36 rows) and 3 other files: the same, floats within {TOLERANCE:g}"


def test_a_float_moved_within_the_tolerance_is_the_same_and_its_difference_is_shown(releases):
    a, b = releases
    edit(b, "data/captions", {"id": "cap-2"}, "lid_prob", lambda p: p + 4e-6)
    result = compare(a, b)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stdout.splitlines() if x.startswith("data/captions.parquet"))
    largest = float(line.split("max float difference ")[1].split()[0])
    assert 3e-6 < largest < TOLERANCE and line.endswith("(lid_prob)")
    assert compare(a, b, "--tolerance", "1e-6").returncode == 1  # the flag is the bound


def test_a_float_moved_beyond_the_tolerance_names_the_table_the_id_and_the_column(releases):
    a, b = releases
    edit(b, "data/captions", {"id": "cap-2"}, "lid_prob", lambda p: p + 1e-3)
    result = compare(a, b)
    assert result.returncode == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("data/captions.parquet: id='cap-2': lid_prob 0.8") and f"> {TOLERANCE:g})" in line
    assert "1 difference(s)" in result.stdout


@pytest.mark.parametrize("change, expected", [
    (lambda b: edit(b, "data/translations", {"id": "cap-1", "target_language": "fr"}, "text",
                    lambda t: "Un chat court."),
     ["data/translations.parquet: id='cap-1', column='text', element=None, target_language='fr': "
      "text 'Un chien court.' (A) != 'Un chat court.' (B)"]),
    (lambda b: drop(b, "data/captions", "id", "cap-3"),
     ["data/captions.parquet: 3 rows (A) != 2 (B)", "data/captions.parquet: id='cap-3': only in A"]),
    (lambda b: edit(b, "data/translations", {"id": "cap-1", "target_language": "de"}, "status", lambda s: "rejected"),
     ["data/translations.parquet: id='cap-1', column='text', element=None, target_language='de': "
      "status 'ok' (A) != 'rejected' (B)"]),
    (lambda b: edit(b, "data/images", {"language": "fr", "image_id": "img-2"}, "image_id", lambda i: "img-9"),
     ["data/images.parquet: language='fr', image_id='img-2': only in A",
      "data/images.parquet: language='fr', image_id='img-9': only in B"]),
    (lambda b: edit(b, "rejects/translation_selection", {"value": "text -> fr"}, "reason", lambda r: "below_min_qe"),
     ["rejects/translation_selection.parquet: stage='select_translations', reason='empty_text', "
      "row_id='cap-3', value='text -> fr': only in A"]),
], ids=["changed text", "dropped row", "flipped decision", "other image selected", "other reject reason"])
def test_a_changed_text_a_dropped_row_or_a_flipped_decision_is_a_difference(releases, change, expected):
    a, b = releases
    change(b)
    result = compare(a, b)
    assert result.returncode == 1
    assert set(expected) <= set(result.stderr.splitlines()), result.stderr


def test_files_reports_and_the_card(releases):
    a, b = releases
    write_json_atomic({"stages": {"language_id": {"rows_in": 4, "kept": 3, "mean_lid_prob": 0.8 + 1e-7}}},
                      str(b / "reports" / "summary.json"))
    assert compare(a, b).returncode == 0  # a report's number within the tolerance
    write_json_atomic({"stages": {"language_id": {"rows_in": 4, "kept": 2, "mean_lid_prob": 0.8}}},
                      str(b / "reports" / "summary.json"))
    (b / "README.md").write_text("# Card\n\n3 captions\n1 translation\n")
    (b / "plots").mkdir()
    (b / "plots" / "extra.png").write_bytes(b"\x89PNG")
    result = compare(a, b)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [
        "README.md: line 4: '2 translations' (A) != '1 translation' (B)",
        "plots/extra.png: only in B",
        "reports/summary.json: stages.language_id.kept: 3 (A) != 2 (B)"]


def test_the_manifest_s_time_and_platform_are_not_differences_its_facts_are(releases):
    a, b = releases
    manifest = json.loads((b / "manifest.json").read_text())
    manifest |= {"built_at": "2030-01-01T00:00:00+00:00", "platform": {"machine": "elsewhere"}}
    (b / "manifest.json").write_text(json.dumps(manifest))
    assert compare(a, b).returncode == 0
    manifest["release"]["config"] = "name: other\n"
    (b / "manifest.json").write_text(json.dumps(manifest))
    result = compare(a, b)
    assert result.returncode == 1
    assert result.stderr.splitlines() == ["manifest.json: release.config: 'name: t\\n' (A) != 'name: other\\n' (B)"]


def test_many_differences_are_shown_up_to_a_cap_and_counted(releases):
    a, b = releases
    path = str(b / "data" / "clip_scores.parquet")
    data = pq.read_table(path)
    write_parquet_atomic(data.set_column(1, "clip_score", pc.add(data["clip_score"], 0.5)), path)
    comparison = compare_releases(str(a), str(b))
    lines = [x for x in comparison.lines() if x.startswith("data/clip_scores.parquet")]
    assert comparison.differences == 25 and len(lines) == SHOWN + 1
    assert lines[-1] == f"data/clip_scores.parquet: … and {25 - SHOWN} more differences"


@pytest.mark.parametrize("make, message", [
    (lambda p: p.mkdir(), "not a release (no manifest.json)"),
    (lambda p: None, "not a release (no manifest.json)"),
    (lambda p: (p.mkdir(), (p / "manifest.json").write_text("{not json")), "unreadable release (JSONDecodeError"),
])
def test_a_folder_that_is_not_a_release_is_refused_in_one_line(releases, tmp_path, make, message):
    make(tmp_path / "c")
    result = compare(releases[0], tmp_path / "c")
    assert result.returncode == 2
    [line] = result.stderr.splitlines()
    assert line.startswith(f"xmdata: error: {tmp_path / 'c'}: ") and message in line


def test_a_tolerance_that_is_not_a_finite_non_negative_number_is_refused(releases):
    for bad in ("-0.5", "nan"):
        result = compare(*releases, "--tolerance", bad)
        assert result.returncode == 2 and result.stderr.startswith("xmdata: error: the tolerance"), result.stderr


def test_every_published_table_has_its_key():
    assert set(KEYS) == set(TABLES)


def test_the_manifest_records_the_platform_outside_release_sha256_and_still_verifies(tmp_path, monkeypatch):
    manifest = json.loads((build_release(tmp_path / "a") / "manifest.json").read_text())
    record = manifest["platform"]
    assert record["machine"] == platform.machine() and record["numpy"]["version"]
    assert "torch" in record and "cpu_flags" in record and "platform" not in manifest["release"]
    if os.path.exists("/proc/cpuinfo") and platform.machine() == "x86_64":
        assert "sse2" in record["cpu_flags"]
    assert verify_release(str(tmp_path / "a")) == []
    monkeypatch.setattr(manifest_module, "platform_record", lambda: {"machine": "another"})
    again = write_manifest(str(tmp_path / "a"), {"name": "t", "config": "name: t\n", "work_folder": "build"}, {"build"})
    assert again["platform"] == {"machine": "another"}
    assert again["release_sha256"] == manifest["release_sha256"]  # another machine, the same hash
    assert run_xmdata(["release", "verify", tmp_path / "a"], dict(os.environ)).returncode == 0


def test_package_versions_in_the_hash_leave_the_build_label_to_the_platform(monkeypatch):
    monkeypatch.setattr(manifest_module.metadata, "version", lambda name: "2.13.0+cpu")
    assert set(manifest_module.package_versions().values()) == {"2.13.0"}


@pytest.mark.slow  # the session's demo release (built once per run)
def test_the_demo_release_compares_equal_to_its_copy_and_a_moved_clip_score_is_named(demo_release, tmp_path):
    copy = shutil.copytree(demo_release, tmp_path / "demo", ignore=shutil.ignore_patterns("build"))
    assert "platform" in json.loads((demo_release / "manifest.json").read_text())
    path = str(copy / "data" / "clip_scores.parquet")
    data = pq.read_table(path)
    result = compare(demo_release, copy)
    assert result.returncode == 0, result.stderr
    assert f"data/clip_scores.parquet: {data.num_rows} rows, max float difference 0" in result.stdout.splitlines()
    scores = data["clip_score"].to_pylist()
    row = next(i for i, s in enumerate(scores) if s is not None)
    old, scores[row] = scores[row], scores[row] + 0.01
    column = data.schema.get_field_index("clip_score")
    write_parquet_atomic(data.set_column(column, data.schema.field(column), pa.array(scores, pa.float64())), path)
    result = compare(demo_release, copy)
    assert result.returncode == 1
    assert result.stderr.splitlines() == [f"data/clip_scores.parquet: id={data['id'][row].as_py()!r}: clip_score "
                                          f"{old!r} (A) != {scores[row]!r} (B) (|Δ| 0.01 > {TOLERANCE:g})"]


def test_pooled_candidates_are_matched_by_engine_and_an_older_table_without_it_still_compares(tmp_path):
    """Two engines each give beam rank 0 of a unit: matched on (…, engine, beam_rank), a changed score
    is named with its engine; a candidates table written before the column is matched without it."""
    from xmdata.tasks.release.compare_tables import compare_tables

    def candidates(scores, engine=True):
        table = {"id": ["a", "a"], "column": ["text"] * 2, "element": pa.array([None, None], pa.int32()),
                 "segment": pa.array([0, 0], pa.int32()), "target_language": ["fr", "fr"],
                 "engine": ["nllb:x", "m2m100:y"], "beam_rank": pa.array([0, 0], pa.int32()),
                 "qe_score": pa.array(scores, pa.float32())}
        return pa.table({k: v for k, v in table.items() if engine or k != "engine"})

    (tmp_path / "data").mkdir()
    name = "data/translation_candidates.parquet"
    for side, scores in (("a", [0.5, 0.3]), ("b", [0.5, 0.9])):
        pq.write_table(candidates(scores), tmp_path / f"{side}.parquet")
    result = compare_tables(name, str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), 1e-6)
    assert len(result.lines) == 1 and "m2m100:y" in result.lines[0] and "qe_score" in result.lines[0]
    for side, scores in (("a", [0.5, 0.3]), ("b", [0.5, 0.3])):
        pq.write_table(candidates(scores, engine=False), tmp_path / f"{side}.parquet")
    assert compare_tables(name, str(tmp_path / "a.parquet"), str(tmp_path / "b.parquet"), 1e-6).lines == []
