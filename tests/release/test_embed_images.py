"""Images inside a release (issue 67 items 1, 2, 4): the `image` column is the Hugging Face `Image` struct
with the features in the Parquet schema metadata, and `datasets` itself (5.0.1, a test dependency only)
loads it — from the Parquet files and from the release folder with its card — decoding to the source
file's pixels; the bytes are the file's own; row groups and files are bounded; the images' sha256 are
read once."""
from __future__ import annotations

import io
import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from support.cli_in_process import run_xmdata
from support.demo_release import sample_inputs

from xmdata.tasks.release.embed_images import ImageSources, embed_release_images, image_bytes, images_fingerprint, \
    table_files, with_image_column, write_embedded
from xmdata.tasks.release.hf_features import METADATA_KEY, features_of

CONFIG = """name: embed-check
shards: 2
embed_images: true
scoring: {input: captions.jsonl, images: images.csv, clip_model: "tiny:open_clip"}
"""


def _png(path, size=(40, 30), colour=(200, 30, 60)):
    Image.new("RGB", size, colour).save(path)
    return path


@pytest.mark.slow  # a scoring release with the tiny CLIP (~15 s)
def test_datasets_loads_the_embedded_images_as_their_files_pixels(tmp_path, cli_env, monkeypatch):
    import datasets

    project = sample_inputs(tmp_path / "project", CONFIG, captions=4)
    monkeypatch.chdir(project)
    out = tmp_path / "release"
    result = run_xmdata(["release", "--config", "release.yaml", "--out", str(out), "--quiet"], cli_env)
    assert result.returncode == 0, result.stderr[-3000:]
    assert run_xmdata(["release", "verify", str(out)], cli_env).returncode == 0
    manifest = json.load(open(out / "manifest.json"))
    assert manifest["release"]["images"]["by_id"]["files"] > 0  # the images' sha256 are facts of the release

    for config in ("clip_scores",):  # image_path under the folder the build recorded
        path = out / "data" / f"{config}.parquet"
        file = pq.ParquetFile(path)
        meta = json.loads(file.schema_arrow.metadata[METADATA_KEY])
        assert meta["info"]["features"]["image"] == {"_type": "Image"}
        # every other column's feature is the one datasets derives from the Arrow type itself
        derived = datasets.Features.from_arrow_schema(file.schema_arrow.remove_metadata()).to_dict()
        assert {k: v for k, v in meta["info"]["features"].items() if k != "image"} == \
            {k: v for k, v in derived.items() if k != "image"}
        group = file.metadata.row_group(0)
        assert all(group.column(i).has_offset_index for i in range(group.num_columns))  # the page index
        table = pq.read_table(path)
        by_parquet = datasets.load_dataset("parquet", data_files=str(path), split="train")
        by_folder = datasets.load_dataset(str(out), config, split="test")  # the card's configs and dataset_info
        for ds in (by_parquet, by_folder):
            assert isinstance(ds.features["image"], datasets.Image)
        assert by_folder.num_rows == table.num_rows > 0
        for row, cell in zip(by_folder, table["image"].to_pylist()):
            source = project / cell["path"]
            assert cell["bytes"] == source.read_bytes()  # byte for byte
            assert np.array_equal(np.asarray(row["image"].convert("RGB")), np.asarray(Image.open(source).convert("RGB")))

    card = (out / "README.md").read_text()
    assert "dtype: image" in card and "## Images" in card and manifest["release_sha256"] not in card
    again = run_xmdata(["release", "--config", "release.yaml", "--out", str(out)], cli_env)
    assert "unchanged since it was published" in again.stdout
    assert json.load(open(out / "manifest.json"))["release_sha256"] == manifest["release_sha256"]


def test_images_sha256_are_read_once_then_known_by_stat(tmp_path, monkeypatch):
    a, b = _png(tmp_path / "a.png"), _png(tmp_path / "b.png", colour=(1, 2, 3))
    sources = ImageSources(by_id={"a": ("a.png", str(a)), "b": ("b.png", str(b))})
    first = images_fingerprint(sources)
    import xmdata.tasks.clean.fingerprint as fingerprint

    monkeypatch.setattr(fingerprint, "sha256_file", lambda path: pytest.fail(f"{path} read again"))
    assert images_fingerprint(sources) == first
    monkeypatch.undo()
    _png(b, colour=(9, 9, 9))  # changed: read again, another sha256
    os.utime(b, ns=(1, 1))
    assert images_fingerprint(sources)["by_id"]["sha256"] != first["by_id"]["sha256"]


def test_a_string_image_column_becomes_the_struct_and_max_side_resizes_to_jpeg(tmp_path):
    big, small = _png(tmp_path / "big.png", (64, 48)), _png(tmp_path / "small.png", (20, 10))
    table = pa.table({"id": ["q1", "q2", "q3"], "image": ["big.png", "small.png", "gone.png"], "n": [1, 2, 3]})
    refs = [(p, str(tmp_path / p)) for p in table["image"].to_pylist()]
    embedded, missing, bad = with_image_column(table, refs, 32)
    assert embedded.column_names == ["id", "image", "n"] and missing == 1 and bad == []
    cells = embedded["image"].to_pylist()
    assert Image.open(io.BytesIO(cells[0]["bytes"])).format == "JPEG"
    assert Image.open(io.BytesIO(cells[0]["bytes"])).size == (32, 24) and cells[0]["path"] == "big.png"
    assert cells[1]["bytes"] == small.read_bytes()  # under the bound: the original bytes
    assert cells[2] is None  # a missing file: a null image, counted
    assert image_bytes(str(big), None) == big.read_bytes()


def test_row_groups_and_files_are_bounded_and_datasets_reads_the_numbered_files(tmp_path):
    import datasets

    rng = np.random.default_rng(0)
    files = []
    for i in range(12):  # noise: PNGs of ~3 kB that do not compress
        path = tmp_path / f"img{i}.png"
        Image.fromarray(rng.integers(0, 255, (32, 32, 3), dtype=np.uint8)).save(path)
        files.append(path)
    table = pa.table({"id": [f"r{i}" for i in range(12)], "image": [f.name for f in files]})
    embedded, _, _ = with_image_column(table, [(f.name, str(f)) for f in files], None)
    release = tmp_path / "release"
    names = write_embedded(embedded, str(release), "rows", row_group_bytes=7_000, max_file_bytes=16_000)
    assert len(names) > 1 and names[0] == f"data/rows-00000-of-{len(names):05d}.parquet"
    assert [os.path.relpath(p, release) for p in table_files(str(release), "rows")] == names
    for name in names:
        meta = pq.ParquetFile(release / name).metadata
        sizes = [meta.row_group(g).total_byte_size for g in range(meta.num_row_groups)]
        assert all(s <= 7_000 + 400 for s in sizes), sizes  # a group holds what fits, never one row more
    again = write_embedded(embedded, str(tmp_path / "again"), "rows", row_group_bytes=7_000, max_file_bytes=16_000)
    assert [(release / n).read_bytes() for n in names] == [(tmp_path / "again" / n).read_bytes() for n in again]
    ds = datasets.load_dataset("parquet", data_files=[str(release / n) for n in names], split="train")
    assert ds.num_rows == 12 and isinstance(ds.features["image"], datasets.Image)
    assert ds[5]["image"].size == (32, 32)
    # the card's data_files list the numbered files, and its dataset_info the features: the folder loads
    from types import SimpleNamespace

    from xmdata.tasks.release.card import header

    config = SimpleNamespace(name="split", license="cc0-1.0")
    (release / "README.md").write_text(header(config, {"rows": "rows"}, ["en"], 12, {"rows": {"files": names}},
                                              str(release)))
    assert f"- {names[1]}" in (release / "README.md").read_text()
    by_folder = datasets.load_dataset(str(release), "rows", split="test")
    assert by_folder.num_rows == 12 and isinstance(by_folder.features["image"], datasets.Image)


def test_a_table_without_image_references_is_left_as_written(tmp_path):
    release = tmp_path / "r"
    (release / "data").mkdir(parents=True)
    pq.write_table(pa.table({"language": ["fr"], "selected": [3]}), release / "data" / "per_language.parquet")
    before = (release / "data" / "per_language.parquet").read_bytes()
    assert embed_release_images(str(release), ["per_language"], ImageSources(), None) == {}
    assert (release / "data" / "per_language.parquet").read_bytes() == before
    assert features_of(pa.schema([("l", pa.list_(pa.string()))])) == \
        {"l": {"feature": {"dtype": "string", "_type": "Value"}, "_type": "List"}}


def test_each_kind_of_reference_finds_its_file(tmp_path):
    from xmdata.tasks.release.embed_images import references

    sources = ImageSources(by_id={"img-1": ("images/a.png", "/abs/images/a.png")}, roots={"clip_scores": "/root"},
                           qa_root="/qa")
    assert references("captions", pa.table({"id": ["c"], "image_id": ["img-1"]}), sources) == \
        [("images/a.png", "/abs/images/a.png")]
    assert references("captions", pa.table({"id": ["c"], "image_id": ["img-9"]}), sources) == [("img-9", None)]  # unresolved
    assert references("clip_scores", pa.table({"image_path": ["x/b.jpg", None]}), sources) == \
        [("x/b.jpg", "/root/x/b.jpg"), None]
    assert references("qa_parallel", pa.table({"image": ["q.png"]}), sources) == [("q.png", "/qa/q.png")]
    assert references("qa_counts", pa.table({"task": ["t"]}), sources) is None
    # another table's string image is under another folder (an import's): never looked for under the Q/A one
    assert references("mmmeb_queries", pa.table({"image": ["q.png"]}), sources) is None


def test_the_flag_and_the_config_key_are_one_declaration(tmp_path, capsys):
    from xmdata.cli import main
    from xmdata.cli_params import params_from_args
    from xmdata.cli_parser import build_parser
    from xmdata.flows.release_config import load_release_config

    args = build_parser().parse_args(["release", "--config", "demo", "--out", str(tmp_path / "o"), "--embed-images",
                                      "--image-max-side", "512"])
    given = params_from_args(args).given()
    assert given == {"embed_images": True, "image_max_side": 512}
    release = load_release_config("demo", images=given)
    assert release.config.embed_images and release.config.image_max_side == 512 and release.overrides == given
    assert load_release_config("demo").overrides == {}  # not given: the manifest records nothing new
    assert main(["release", "--config", "demo", "--out", str(tmp_path / "o"), "--image-max-side", "512"]) == 2
    err = capsys.readouterr().err
    assert "set embed_images too" in err and len(err.strip().splitlines()) == 1
    assert main(["release", "--config", "demo", "--out", str(tmp_path / "o"), "--embed-images",
                 "--image-max-side", "8"]) == 2
    assert "--image-max-side" in capsys.readouterr().err and not (tmp_path / "o").exists()


def test_an_image_id_no_images_table_resolves_is_counted_missing(tmp_path):
    a = _png(tmp_path / "a.png")
    release = tmp_path / "r"
    (release / "data").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["c1", "c2", "c3"], "image_id": ["a", "nowhere", None]}),
                   release / "data" / "captions.parquet")
    done = embed_release_images(str(release), ["captions"], ImageSources(by_id={"a": ("a.png", str(a))}), None)
    assert done["captions"]["images"] == 1 and done["captions"]["missing"] == 1  # the unresolved id: counted
    cells = pq.read_table(release / "data" / "captions.parquet")["image"].to_pylist()
    assert cells[0]["bytes"] == a.read_bytes() and cells[1] is None and cells[2] is None
    from types import SimpleNamespace

    from xmdata.tasks.release.card import images_section

    assert "| captions | 1 | 1 | 1 |" in images_section(SimpleNamespace(image_max_side=None), done)


def test_an_images_table_the_embedder_cannot_read_is_refused_before_anything_is_written(tmp_path, capsys):
    from xmdata.cli import main

    project = sample_inputs(tmp_path / "project", CONFIG, captions=2)
    images = "s3://bucket/images.csv"  # the embedder reads local images tables and files
    (project / "release.yaml").write_text(CONFIG.replace("images.csv", images))
    out = tmp_path / "out"
    assert main(["release", "--config", str(project / "release.yaml"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "embed_images: scoring.images" in err and images in err, err
    assert not out.exists()


@pytest.mark.parametrize("max_side", [None, 16])
def test_a_file_that_is_no_image_is_a_bad_image_with_its_reason_never_a_traceback(tmp_path, max_side):
    good = _png(tmp_path / "good.png", (20, 10))
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n" + b"garbage" * 20)
    (tmp_path / "notes.png").write_text("not an image at all")
    release = tmp_path / "r"
    (release / "data").mkdir(parents=True)
    pq.write_table(pa.table({"id": ["q1", "q2", "q3"], "image": ["good.png", "corrupt.png", "notes.png"]}),
                   release / "data" / "qa_parallel.parquet")
    done = embed_release_images(str(release), ["qa_parallel"], ImageSources(qa_root=str(tmp_path)), max_side)
    entry = done["qa_parallel"]
    assert (entry["images"], entry["missing"], entry["bad"]) == (1, 0, 2)
    assert [p for p, _ in entry["bad_reasons"]] == ["corrupt.png", "notes.png"]
    assert all("Error" in reason for _, reason in entry["bad_reasons"])  # why, named
    cells = pq.read_table(release / "data" / "qa_parallel.parquet")["image"].to_pylist()
    assert cells[1] is None and cells[2] is None and Image.open(io.BytesIO(cells[0]["bytes"])).size[0] <= 20
    from types import SimpleNamespace

    from xmdata.tasks.release.card import images_section

    section = images_section(SimpleNamespace(image_max_side=max_side), done)
    assert "| qa_parallel | 1 | 1 | 0 | 2 |" in section and "`corrupt.png`" in section


def test_a_resized_image_is_turned_upright_as_its_exif_orientation_says(tmp_path):
    path = tmp_path / "sideways.jpg"
    exif = Image.Exif()
    exif[0x0112] = 6  # Orientation: rotate 90° clockwise to display; stored 64 wide, 32 high
    Image.new("RGB", (64, 32), (10, 200, 10)).save(path, exif=exif)
    shown = Image.open(io.BytesIO(image_bytes(str(path), 32)))
    assert shown.size == (16, 32)  # upright: as a viewer displays the original, portrait
    assert image_bytes(str(path), None) == path.read_bytes()  # not resized: the original bytes, EXIF and all


def test_image_max_side_alone_is_taken_over_a_config_that_embeds(tmp_path):
    from xmdata.cli_params import params_from_args
    from xmdata.cli_parser import build_parser
    from xmdata.flows.release_config import load_release_config

    project = sample_inputs(tmp_path / "project", CONFIG, captions=2)  # CONFIG: embed_images: true
    args = build_parser().parse_args(["release", "--config", str(project / "release.yaml"), "--out",
                                      str(tmp_path / "o"), "--image-max-side", "512"])
    given = params_from_args(args).given()  # the flag alone: no rule across the two keys here
    assert given == {"image_max_side": 512}
    release = load_release_config(str(project / "release.yaml"), images=given)
    assert release.config.embed_images and release.config.image_max_side == 512  # the merged config's rule holds
    from xmdata.schemas.contract import ContractError

    (project / "plain.yaml").write_text(CONFIG.replace("embed_images: true\n", ""))
    with pytest.raises(ContractError, match="set embed_images too"):
        load_release_config(str(project / "plain.yaml"), images=given)


def test_a_rewrite_that_keeps_size_and_mtime_is_read_again(tmp_path):
    import time

    a = _png(tmp_path / "a.png", colour=(1, 2, 3))
    sources = ImageSources(by_id={"a": ("a.png", str(a))})
    first = images_fingerprint(sources)
    st = os.stat(a)
    time.sleep(0.05)  # past the kernel's timestamp granularity
    data = bytearray(a.read_bytes())
    data[-20] ^= 0xFF  # same size, other bytes
    with open(a, "r+b") as f:  # in place: the same inode
        f.write(bytes(data))
    os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))  # mtime put back
    assert os.stat(a).st_mtime_ns == st.st_mtime_ns and os.stat(a).st_ino == st.st_ino
    assert images_fingerprint(sources)["by_id"]["sha256"] != first["by_id"]["sha256"]
