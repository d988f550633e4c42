"""croissant.json: Croissant 1.1 with the RAI fields, validated and loaded by mlcroissant; its records
are the Parquet rows, its checksums the manifest's, and `release verify` covers it."""
import json
import os
import shutil

import mlcroissant as mlc
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata

from xmdata.flows.release_config import ReleaseConfig
from xmdata.tasks.release.compare import compare_releases
from xmdata.tasks.release.croissant import CROISSANT, write_croissant
from xmdata.tasks.release.manifest import file_entry, verify_release, write_manifest

CONFIG = ReleaseConfig(name="tiny-croissant", version="1.0.0", description="Captions and their rejects.",
                       citation="@misc{tiny, title = {Tiny}}\n")
FACTS = {"name": "tiny-croissant", "xmdata": {"version": "0.1.0"}, "config": {"file": "r.yaml", "sha256": "c0ffee"},
         "inputs": {"language_id.input": {"path": "captions.jsonl", "sha256": "ab12", "bytes": 90}},
         "imports": {}, "models": [{"role": "language_id.lid_model", "ref": "lid.176", "backend": "fasttext",
                                    "sha256": "e113"}],
         "stages": {"language_id": {"rows_in": 4, "rows_out": 3, "rejected": {"empty_text": 1}, "shards": 1}}}
TABLES = {
    "data/captions.parquet": pa.table({
        "id": ["c1", "c2", "c3"], "text": ["a dog", None, "ein Hund"],
        "lid_prob": pa.array([0.5, None, 0.25], pa.float32()),
        "rank": pa.array([1, None, 3], pa.int32()), "kept": [True, False, None], "refs": [["x", "y"], [], None],
        "box": [{"w": 1}, None, {"w": 2}],  # a struct has no Croissant column type: left out, said so
        "source caption": ["x", "y", "z"]}),  # a column an input brought: no whitespace in its @id
    "data/qa_parallel.parquet": pa.table({"id": pa.array([], pa.string())}),  # published empty: a zero is a fact
    "rejects/language_id.parquet": pa.table({"stage": ["language_id"], "reason": ["empty_text"], "row_id": ["c4"],
                                             "value": [""]}),
}


def _plain(value):
    return value.decode() if isinstance(value, bytes) else [_plain(v) for v in value] if isinstance(value, list) \
        else value


@pytest.fixture
def release(tmp_path):
    for path, table in TABLES.items():
        (tmp_path / os.path.dirname(path)).mkdir(exist_ok=True)
        pq.write_table(table, tmp_path / path)
    (tmp_path / "README.md").write_text("---\nlanguage:\n- de\n- en\n---\n# tiny\n")
    write_croissant(str(tmp_path), CONFIG, FACTS, {p: file_entry(str(tmp_path / p)) for p in TABLES})
    return tmp_path, write_manifest(str(tmp_path), FACTS)


def test_croissant_validates_and_loads_the_parquet_rows_with_the_manifest_checksums(release):
    out, manifest = release
    dataset = mlc.Dataset(jsonld=str(out / CROISSANT))  # a validation error raises
    metadata = dataset.metadata
    # What a deterministic file cannot hold: the date of publication (a build has no such fact).
    assert [w for w in metadata.ctx.issues.warnings if "datePublished" not in w] == []
    assert (metadata.name, metadata.version, metadata.license) == ("tiny-croissant", "1.0.0", ["cc-by-4.0"])
    assert metadata.conforms_to == ["http://mlcommons.org/croissant/1.1", "http://mlcommons.org/croissant/RAI/1.0"]
    assert metadata.cite_as == "@misc{tiny, title = {Tiny}}" and metadata.in_language == ["de", "en"]
    assert metadata.data_preprocessing_protocol == [
        "language_id: 4 rows in, 3 out; refused empty_text 1 (rejects/language_id.parquet)"]
    assert "captions.jsonl (sha256 ab12" in metadata.data_collection_raw_data
    assert metadata.machine_annotation_tools == ["language_id.lid_model: lid.176 (fasttext, sha256 e113)"]

    files = manifest["release"]["files"]
    assert {d.id: d.sha256 for d in metadata.distribution} == {p: files[p]["sha256"] for p in TABLES}
    assert CROISSANT in files  # hashed into release_sha256, so `release verify` covers it
    for record_set in metadata.record_sets:
        path = record_set.fields[0].source.uuid
        rows = pq.read_table(out / path).drop_columns([c for c in ("box",) if path.startswith("data/captions")])
        names = {f.uuid: f.name for f in record_set.fields}  # the column's own name, whitespace and all
        records = [{names[k]: _plain(v) for k, v in r.items()} for r in dataset.records(record_set.uuid)]
        assert records == rows.to_pylist(), path
    described = {rs.uuid: rs.description for rs in metadata.record_sets}
    assert "left out, no Croissant 1.1 column type: box (struct<w: int64>)" in described["captions"]
    assert set(described) == {"captions", "qa_parallel", "rejects/language_id"}


def test_croissant_is_deterministic_and_verify_and_compare_cover_it(release, tmp_path_factory):
    out, manifest = release
    first = (out / CROISSANT).read_bytes()
    write_croissant(str(out), CONFIG, FACTS, {p: file_entry(str(out / p)) for p in TABLES})
    assert (out / CROISSANT).read_bytes() == first and manifest["release_sha256"].encode() not in first
    copy = tmp_path_factory.mktemp("copy") / "release"
    shutil.copytree(out, copy)
    document = json.loads(first)
    document["distribution"][0]["sha256"] = "0" * 64  # another platform's floats: compare reads the tables
    (copy / CROISSANT).write_text(json.dumps(document))
    assert compare_releases(str(out), str(copy)).differences == 0
    document["recordSet"][0]["field"][0]["dataType"] = "sc:Integer"
    (copy / CROISSANT).write_text(json.dumps(document))
    assert compare_releases(str(out), str(copy)).lines() == [
        "croissant.json: recordSet[0].field[0].dataType: 'sc:Text' (A) != 'sc:Integer' (B)"]

    assert verify_release(str(out)) == []
    (out / CROISSANT).write_bytes(first.replace(b"tiny-croissant", b"tiny-croissanT", 1))  # one byte
    result = run_xmdata(["release", "verify", out], dict(os.environ))
    assert result.returncode == 1 and "croissant.json: sha256" in result.stderr, result.stdout + result.stderr


@pytest.mark.slow
def test_the_demo_release_carries_a_croissant_that_validates(demo_release):
    files = json.load(open(demo_release / "manifest.json"))["release"]["files"]
    dataset = mlc.Dataset(jsonld=str(demo_release / CROISSANT))
    assert CROISSANT in files and {d.id: d.sha256 for d in dataset.metadata.distribution} == {
        p: e["sha256"] for p, e in files.items() if p.endswith(".parquet")}
    records = [{k.split("/")[-1]: _plain(v) for k, v in r.items()} for r in dataset.records("captions")]
    assert records == pq.read_table(demo_release / "data" / "captions.parquet").to_pylist()
