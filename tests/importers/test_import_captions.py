"""`xmdata import` of caption, image and instance datasets, each fixture written here in its exact
published layout (a few rows), then fed to the stage that consumes it."""
from __future__ import annotations

import json

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from xmdata.cli import main
from xmdata.schemas import CAPTIONS, IMAGES
from xmdata.schemas.readers import read_input
from xmdata.tasks.qa.input import passthrough_columns, read_qa_input, select_instances
from xmdata.tasks.qa.outputs import parallel_table
from xmdata.tasks.scoring.input import pairs_from_captions, read_score_input

XM3600_LINES = [  # the second image's key repeats in a third line: its captions' ids repeat
    {"image/key": "000411001ff7dd4f", "image/locale": "bn",
     "en": {"caption": ["A dog on a road.", "A brown dog."], "caption/tokenized": ["A dog on a road .", "A brown dog ."],
            "caption/tokenized/lowercase": ["a dog on a road .", "a brown dog ."]},
     "fr": {"caption": ["Un chien sur une route."], "caption/tokenized": ["un chien sur une route ."]}},
    {"image/key": "00124c8fd2bd4a4b", "image/locale": "fr",
     "en": {"caption": ["Two cups of coffee.", ""], "caption/tokenized": ["two cups of coffee .", ""]}},
    {"image/key": "00124c8fd2bd4a4b", "en": {"caption": ["Two cups."], "caption/tokenized": ["two cups ."]}},
]


def write_jsonl(path, records):
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return path


def test_xm3600_captions_and_images_reach_scoring_and_caption_stats(tmp_path, capsys):
    src = tmp_path / "xm3600"
    (src / "images").mkdir(parents=True)
    write_jsonl(src / "captions.jsonl", XM3600_LINES)
    Image.new("RGB", (8, 8), "red").save(src / "images" / "000411001ff7dd4f.jpg")  # the other is not downloaded
    (src / "image_attributions.csv").write_text(  # the XM3600 image list (web-data), Open Images columns
        "ImageID,Subset,OriginalURL,OriginalLandingURL,License,AuthorProfileURL,Author,Title\n"
        "000411001ff7dd4f,test,https://farm.staticflickr.com/1_o.jpg,https://flickr.com/p/1,"
        "https://creativecommons.org/licenses/by/2.0/,https://flickr.com/u/1,Ann,Road\n")
    out = tmp_path / "out"
    assert main(["import", "xm3600", str(src), "--images", str(src / "images"), "--out", str(out)]) == 0
    captions = read_input(str(out / "captions.parquet"), CAPTIONS)
    assert captions.column("id").to_pylist() == ["000411001ff7dd4f/en/0", "000411001ff7dd4f/en/1",
                                                 "000411001ff7dd4f/fr/0", "00124c8fd2bd4a4b/en/0"]
    assert captions.column("caption_index").to_pylist() == [0, 1, 0, 0]
    assert captions.column("caption_tokenized").to_pylist()[2] == "un chien sur une route ."
    assert captions.column("image_locale").to_pylist() == ["bn", "bn", "bn", "fr"]
    assert captions.column("caption_tokenized_lowercase").to_pylist()[0] == "a dog on a road ."
    image = read_input(str(out / "images.parquet"), IMAGES).to_pylist()[0]
    assert (image["subset"], image["author"], image["license"]) == ("test", "Ann", "https://creativecommons.org/licenses/by/2.0/")
    report = json.loads((out / "import_report.json").read_text())
    assert report["rows_read"] == 3 and report["written"] == {"captions": 4, "images": 1}
    assert report["refused"] == {"duplicate_id": 1, "empty_caption": 1, "image_file_missing": 2}
    assert "image/locale" in report["layout"] and "image_attributions.csv" in report["layout"]
    rejects = pq.read_table(out / "rejects.parquet").to_pylist()
    assert {r["row_id"] for r in rejects} == {"00124c8fd2bd4a4b/en/1", "00124c8fd2bd4a4b", "00124c8fd2bd4a4b/en/0"}
    # the score stage's input: captions joined to the downloaded image
    pairs = read_score_input(pairs_from_captions(captions, read_input(str(out / "images.parquet"), IMAGES)))
    assert pairs.column("image_path").to_pylist() == ["000411001ff7dd4f.jpg"] * 3 + [None]
    # images inside OUT: paths become relative to OUT, the score stage's default image root
    assert main(["import", "xm3600", str(src), "--images", str(src / "images"), "--out", str(src)]) == 0
    assert read_input(str(src / "images.parquet"), IMAGES).column("path").to_pylist() == ["images/000411001ff7dd4f.jpg"]
    from xmdata.tasks.evaluation.runner import run_metric
    from xmdata.tasks.evaluation.params import evaluate_options

    stats = run_metric("caption-stats", evaluate_options("caption-stats", str(out / "captions.parquet"), str(out)))
    assert "en" in json.dumps(stats.result) and "fr" in json.dumps(stats.result)


def test_wrong_layout_is_refused_naming_format_and_line_and_writes_nothing(tmp_path, capsys):
    bad = write_jsonl(tmp_path / "captions.jsonl", [XM3600_LINES[0], {"image/key": "k", "en": ["not a dict"]}])
    out = tmp_path / "out"
    assert main(["import", "xm3600", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "not the xm3600 layout" in err and "line 2" in err and "caption list" in err
    assert not out.exists()
    (tmp_path / "plain.jsonl").write_text('{"id": "a", "text": "hello"}\n')
    assert main(["import", "xm3600", str(tmp_path / "plain.jsonl"), "--out", str(out)]) == 2
    assert "line 1" in capsys.readouterr().err and not out.exists()


OPENIMAGES_HEADER = ("ImageID,Subset,OriginalURL,OriginalLandingURL,License,AuthorProfileURL,Author,Title,"
                     "OriginalSize,OriginalMD5,Thumbnail300KURL,Rotation\n")


def openimages_row(image_id, subset):
    return (f"{image_id},{subset},https://farm.staticflickr.com/{image_id}_o.jpg,https://www.flickr.com/photos/x/"
            f"{image_id},https://creativecommons.org/licenses/by/2.0/,https://www.flickr.com/people/x/,Ann Author,"
            f"Title {image_id},2048,abc==,https://c1.staticflickr.com/{image_id}_z.jpg,0.0\n")


def test_openimages_subsets_coordinates_and_exif_reach_geocoding(tmp_path):
    src = tmp_path / "oi"
    src.mkdir()
    (src / "validation-images-with-rotation.csv").write_text(
        OPENIMAGES_HEADER + openimages_row("0001eeaf4aed83f9", "validation") + openimages_row("000a1249af2bc5f0", "validation"))
    (src / "train-images-boxable-with-rotation.csv").write_text(OPENIMAGES_HEADER + openimages_row("00a0b1c2d3e4f5a6", "train"))
    (src / "test-images-with-rotation.csv").write_text(OPENIMAGES_HEADER + openimages_row("00ffee0011223344", "test"))
    coords = tmp_path / "gps.csv"  # the user's own column names, mapped
    coords.write_text("image,lat,lon\n0001eeaf4aed83f9,48.8566,2.3522\n00ffee0011223344,north,2\n")
    photos = tmp_path / "photos"  # downloaded images: one with EXIF GPS (Sydney), one without
    photos.mkdir()
    exif = Image.Exif()
    exif[0x8825] = {1: "S", 2: (33.0, 52.0, 12.0), 3: "E", 4: (151.0, 12.0, 36.0)}
    Image.new("RGB", (4, 4)).save(photos / "000a1249af2bc5f0.jpg", exif=exif)
    Image.new("RGB", (4, 4)).save(photos / "0001eeaf4aed83f9.jpg")
    out = tmp_path / "out"
    assert main(["import", "openimages", str(src), "--subsets", "validation,test", "--coordinates", str(coords),
                 "--images", str(photos), "--map", "image=ImageID,lat=Latitude,lon=Longitude", "--out", str(out)]) == 0
    images = read_input(str(out / "images.parquet"), IMAGES)
    rows = {r["id"]: r for r in images.to_pylist()}
    assert set(rows) == {"0001eeaf4aed83f9", "000a1249af2bc5f0"}
    paris = rows["0001eeaf4aed83f9"]
    assert (paris["latitude"], paris["gps_source"], paris["subset"], paris["author"]) == (48.8566, "coordinates", "validation", "Ann Author")
    assert paris["url"].endswith("_o.jpg") and paris["original_landing_url"].endswith("0001eeaf4aed83f9")
    assert paris["license"].startswith("https://creativecommons.org") and paris["rotation"] == "0.0"
    assert "thumbnail300k_url" in paris and "thumbnail300_kurl" not in paris  # as README names it
    report = json.loads((out / "import_report.json").read_text())
    assert report["filtered_by_subset"] == 1 and report["refused"] == {"bad_coordinates": 1}
    assert report["gps_from"] == {"coordinates": 1, "exif": 1, "none": 0} and "Rotation" in report["layout"]
    assert rows["000a1249af2bc5f0"]["gps_source"] == "exif" and rows["000a1249af2bc5f0"]["latitude"] < -33
    from xmdata.tasks.selection.geocode import geocode

    placed, no_gps = geocode(images)
    assert sorted(placed.column("country").to_pylist()) == ["AU", "FR"] and no_gps.num_rows == 0


def test_openimages_old_layout_and_missing_column(tmp_path, capsys):
    old = tmp_path / "images.csv"  # V2/V3: no Rotation
    old.write_text(OPENIMAGES_HEADER.replace(",Rotation", "") + openimages_row("0001eeaf4aed83f9", "test").rsplit(",", 1)[0] + "\n")
    assert main(["import", "openimages", str(old), "--out", str(tmp_path / "a")]) == 0
    assert "without Rotation" in json.loads((tmp_path / "a" / "import_report.json").read_text())["layout"]
    bad = tmp_path / "bad.csv"
    bad.write_text("id,latitude,longitude\na,1,2\n")
    assert main(["import", "openimages", str(bad), "--out", str(tmp_path / "b")]) == 2
    err = capsys.readouterr().err
    assert "not the openimages layout" in err and "line 1" in err and "ImageID" in err
    assert not (tmp_path / "b").exists()


MMEB_ROWS = {
    "VisualNews_t2i": [{"qry": "Find an image that matches the caption: A rally in the square.", "qry_image_path": "",
                        "pos_text": "<|image_1|>\nRepresent the given image.", "pos_image_path": "VisualNews_t2i/pos/1.jpg",
                        "neg_text": "", "neg_image_path": "VisualNews_t2i/neg/1.jpg"}],
    "OK-VQA": [{"qry": "<|image_1|>\nRepresent the given image with the following question: What is this?",
                "qry_image_path": "OK-VQA/Train/1.jpg", "pos_text": "A bridge", "pos_image_path": "",
                "neg_text": "", "neg_image_path": ""},
               {"qry": "", "qry_image_path": "", "pos_text": "x", "pos_image_path": "", "neg_text": "",
                "neg_image_path": ""}],
}


def test_mmeb_train_parquet_json_and_datasets_save_keep_every_image_path(tmp_path):
    src = tmp_path / "MMEB-train"
    (src / "VisualNews_t2i").mkdir(parents=True)
    pq.write_table(pa.Table.from_pylist(MMEB_ROWS["VisualNews_t2i"]),
                   src / "VisualNews_t2i" / "original-00000-of-00001.parquet")
    (src / "OK-VQA").mkdir()
    write_jsonl(src / "OK-VQA" / "train.jsonl", MMEB_ROWS["OK-VQA"])
    saved = src / "MSCOCO_i2t"  # a datasets save_to_disk folder: Arrow stream + state.json
    saved.mkdir()
    (saved / "state.json").write_text("{}")
    (saved / "dataset_info.json").write_text("{}")
    table = pa.Table.from_pylist([{**MMEB_ROWS["OK-VQA"][0], "qry_image_path": "MSCOCO/1.jpg"}])
    with pa.OSFile(str(saved / "data-00000-of-00001.arrow"), "wb") as sink, pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    out = tmp_path / "out"
    assert main(["import", "mmeb-train", str(src), "--out", str(out)]) == 0
    instances = read_qa_input(str(out / "qa_input.parquet"))
    rows = {r["id"]: r for r in instances.to_pylist()}
    assert set(rows) == {"VisualNews_t2i/original/0", "OK-VQA/train/0", "MSCOCO_i2t/data/0"}
    t2i = rows["VisualNews_t2i/original/0"]
    assert (t2i["task"], t2i["pos_image_path"], t2i["neg_image_path"]) == ("VisualNews_t2i", "VisualNews_t2i/pos/1.jpg",
                                                                          "VisualNews_t2i/neg/1.jpg")
    assert rows["OK-VQA/train/0"]["image"] == rows["OK-VQA/train/0"]["qry_image_path"] == "OK-VQA/Train/1.jpg"
    assert json.loads((out / "import_report.json").read_text())["refused"] == {"empty_query": 1}
    kept, stats = select_instances(instances, per_task=None)  # the QA translation's own input step
    assert kept.num_rows == 3 and "pos_image_path" in kept.column_names and stats["OK-VQA"]["selected"] == 1
    # what the QA translation writes keeps the columns it did not use, joined by id
    translated = pl.DataFrame({"id": ["VisualNews_t2i/original/0"] * 2, "task": ["VisualNews_t2i"] * 2,
                               "part": ["positive", "query"], "source_text": ["p", "q"], "target_language": ["fr"] * 2,
                               "candidate": ["p fr", "q fr"], "image": [None, None], "flattened_newlines": [0, 0],
                               "beam_rank": [0, 0], "lid_label": [None, None], "lid_prob": [None, None],
                               "qe_score": [None, None]})
    parallel = parallel_table(translated, "en", passthrough_columns(kept)).to_pylist()
    assert [(r["target_text"], r["pos_image_path"], r["neg_image_path"]) for r in parallel] == [
        ("p fr", "VisualNews_t2i/pos/1.jpg", "VisualNews_t2i/neg/1.jpg"), ("q fr", "VisualNews_t2i/pos/1.jpg",
                                                                          "VisualNews_t2i/neg/1.jpg")]


def test_mmeb_train_subset_without_its_columns_is_refused(tmp_path, capsys):
    (tmp_path / "src" / "N24News").mkdir(parents=True)
    write_jsonl(tmp_path / "src" / "N24News" / "train.jsonl", [{"query": "q", "positive": "p"}])
    assert main(["import", "mmeb-train", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert "not the mmeb-train layout" in err and "qry" in err and not (tmp_path / "out").exists()


def test_hf_snapshot_with_column_mapping_meets_the_images_contract(tmp_path):
    snap = tmp_path / "snap" / "data"
    snap.mkdir(parents=True)
    pq.write_table(pa.table({"ImageID": ["a", "b"], "Latitude": [1.0, 2.0], "Longitude": [3.0, 4.0], "note": ["x", "y"]}),
                   snap / "test-00000-of-00001.parquet")
    pq.write_table(pa.table({"ImageID": ["c"], "Latitude": [5.0], "Longitude": [6.0], "note": ["z"]}),
                   snap / "validation-00000-of-00001.parquet")
    out = tmp_path / "out"
    assert main(["import", "hf", str(tmp_path / "snap"), "--table", "images", "--subsets", "test",
                 "--map", "ImageID=id,Latitude=latitude,Longitude=longitude", "--out", str(out)]) == 0
    images = read_input(str(out / "images.parquet"), IMAGES)
    assert images.column("id").to_pylist() == ["a", "b"] and images.column("note").to_pylist() == ["x", "y"]
    assert images.column("split").to_pylist() == ["test", "test"]


def test_map_renames_inputs_of_every_command_and_refuses_clashes(tmp_path, capsys):
    path = tmp_path / "images.csv"
    path.write_text("ImageID,Latitude,Longitude\na,1,2\n")
    assert main(["validate", str(path), "--table", "images", "--map", "ImageID=id,Latitude=latitude,Longitude=longitude"]) == 0
    assert main(["validate", str(path), "--table", "images"]) == 2
    assert "'id'" in capsys.readouterr().err
    clash = tmp_path / "clash.csv"
    clash.write_text("id,ImageID,latitude,longitude\na,b,1,2\n")
    assert main(["validate", str(clash), "--table", "images", "--map", "ImageID=id"]) == 2
    assert "already has a column 'id'" in capsys.readouterr().err
    assert main(["validate", str(path), "--table", "images", "--map", "ImageID=id,Latitude=latitude,Longitude=longitude,Typo=x"]) == 0
    assert "no input had a column named Typo" in capsys.readouterr().err
    assert main(["validate", str(path), "--map", "nonsense"]) == 2


def test_release_config_columns_mapping_is_typed():
    import pydantic

    from xmdata.flows.release_config import ReleaseConfig

    config = ReleaseConfig.model_validate({"name": "x", "columns": {"ImageID": "id"}})
    assert config.columns == {"ImageID": "id"}
    with pytest.raises(pydantic.ValidationError, match=r"columns\s+Input should be a valid dictionary"):
        ReleaseConfig.model_validate({"name": "x", "columns": ["ImageID"]})


def test_nested_column_mappings_add_up():
    from xmdata.schemas.column_map import active_column_map, column_mapping

    with column_mapping("A=a"):
        with column_mapping({"B": "b", "A": "x"}):
            assert active_column_map() == {"A": "x", "B": "b"}
        assert active_column_map() == {"A": "a"}
    assert active_column_map() == {}


def test_hf_reads_what_datasets_save_to_disk_writes(tmp_path):
    import datasets

    dd = datasets.DatasetDict({"train": datasets.Dataset.from_dict({"id": ["a", "b"], "text": ["x", "y"]}),
                               "test": datasets.Dataset.from_dict({"id": ["c"], "text": ["z"]})})
    dd.save_to_disk(str(tmp_path / "saved"))
    out = tmp_path / "out"
    assert main(["import", "hf", str(tmp_path / "saved"), "--table", "captions", "--out", str(out)]) == 0
    captions = read_input(str(out / "captions.parquet"), CAPTIONS)
    assert sorted(zip(captions.column("id").to_pylist(), captions.column("split").to_pylist())) == [
        ("a", "train"), ("b", "train"), ("c", "test")]
    assert json.loads((out / "import_report.json").read_text())["layout"] == "datasets save_to_disk (DatasetDict)"
