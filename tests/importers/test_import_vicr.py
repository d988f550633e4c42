"""`xmdata import vicr`: the VICR ratings CSV in its published layout (header image, caption, subset,
num_ratings, ratings, rating_2…; image URLs of COCO val2014 and of Flickr8k files), one rated pair per
row with the mean and every rating, refused rows by reason, the publisher's counts beside what was read;
the rated pairs score and correlate as a score_input table."""
from __future__ import annotations

import json

import pyarrow.parquet as pq
import pytest
from PIL import Image

from xmdata.cli import main
from xmdata.schemas.ratings import RATED_PAIRS
from xmdata.schemas.validate import conform

COCO = "http://images.cocodataset.org/val2014/COCO_val2014_{:012d}.jpg"
FLICKR = "http://validatedicr.org/images/{}"
HEADER = "image,caption,subset,num_ratings,ratings,rating_2,rating_3,rating_4,rating_5,rating_6,rating_7\n"
ROWS = [
    f"{COCO.format(192)},a baseball player throwing a pitch from the mound,train,4,4,3,4,3,,,\n",
    # one image, two captions; the second quoted for its commas, ending in a space as published
    f"{COCO.format(641)},A bus that is sitting in the street.,train,5,4,4,4,4,5,,\n",
    f'{COCO.format(641)},"A bus, white and long, on a street. ",train,5,5,4,5,4,5,,\n',
    # the same caption on another image (ids are per image, never per text)
    f"{COCO.format(257)},a group of people that are next to each other .,test,4,3,3,4,3,,,\n",
    f"{COCO.format(589)},a man is wearing a hat and a blue shirt .,val,6,1,3,2,2,2,1,\n",
    f"{FLICKR.format('1000268201_693b08cb0e.jpg')},A child climbing stairs .,test,5,5,5,4,5,5,,\n",
    f"{COCO.format(757)},a person on skis,train,5,1,1,1,1,,,\n",             # says 5, holds 4
    f"{COCO.format(761)},a group of people on skis,train,4,4,x,5,4,,,\n",    # not a number
    f"{COCO.format(772)},three sheep,train,4,5,4,6,4,,,\n",                  # outside 1-5
    f"{COCO.format(776)},a man with headphones,holdout,4,1,1,1,1,,,\n",      # no such split
    f"http://example.org/photo.png,a photo,train,4,1,1,1,1,,,\n",            # neither collection
    f"{COCO.format(802)},   ,train,4,2,1,2,2,,,\n",                          # empty caption
]


def write_vicr(folder, rows=ROWS, name="vicr.csv"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(HEADER + "".join(rows), encoding="utf-8")
    return folder / name


def run_import(source, out, *extra):
    assert main(["import", "vicr", str(source), "--out", str(out), *extra]) == 0
    return pq.read_table(out / "rated_pairs.parquet"), json.loads((out / "import_report.json").read_text())


def test_rated_pairs_means_every_rating_splits_and_refusals(tmp_path):
    table, report = run_import(write_vicr(tmp_path / "src"), tmp_path / "out")
    conform(table, RATED_PAIRS, source="vicr")  # the contract holds as written
    rows = {r["id"]: r for r in table.to_pylist()}
    assert list(rows) == ["COCO_val2014_000000000192#0", "COCO_val2014_000000000641#0", "COCO_val2014_000000000641#1",
                          "COCO_val2014_000000000257#0", "COCO_val2014_000000000589#0", "1000268201_693b08cb0e#0"]
    bus = rows["COCO_val2014_000000000641#1"]
    assert bus["text"] == "A bus, white and long, on a street. " and bus["ratings"] == [5, 4, 5, 4, 5]
    assert bus["rating"] == pytest.approx(4.6) and bus["split"] == "train" and bus["language"] == "en"
    assert bus["image_path"] == "val2014/COCO_val2014_000000000641.jpg" and bus["corpus"] == "coco"
    assert rows["COCO_val2014_000000000589#0"]["ratings"] == [1, 3, 2, 2, 2, 1]
    flickr = rows["1000268201_693b08cb0e#0"]
    assert (flickr["image_path"], flickr["corpus"], flickr["split"]) == (
        "Flicker8k_Dataset/1000268201_693b08cb0e.jpg", "flickr8k", "test")
    assert report["refused"] == {"empty_text": 1, "image_not_coco_or_flickr8k": 1, "rating_count_mismatch": 1,
                                 "rating_not_a_number": 1, "rating_outside_1_5": 1, "unknown_split": 1}
    assert report["rows_read"] == len(ROWS)
    counts = report["publisher_counts"]
    assert counts["read"]["pairs"] == 6 and counts["read"]["ratings"] == 4 + 5 + 5 + 4 + 6 + 5
    assert counts["read"]["pairs/test"] == 2 and counts["publisher"]["pairs/test"] == 3161
    assert any(d.startswith("pairs: the publisher has 15,646, read 6") for d in counts["differences"])
    assert report["images_in_train_and_another_split"] == 0
    rejects = pq.read_table(tmp_path / "out" / "rejects.parquet").to_pylist()
    assert {r["stage"] for r in rejects} == {"import_vicr"}


def test_split_keeps_one_split_and_counts_the_whole_file(tmp_path, capsys):
    table, report = run_import(write_vicr(tmp_path / "src"), tmp_path / "out", "--split", "test")
    assert table["id"].to_pylist() == ["COCO_val2014_000000000257#0", "1000268201_693b08cb0e#0"]
    assert report["pairs_of_other_splits_left_out"] == 4  # 3 train, 1 val; refused rows stay refused
    assert report["publisher_counts"]["read"]["pairs"] == 6 and report["refused"]["unknown_split"] == 1
    assert main(["import", "vicr", str(tmp_path / "src"), "--split", "holdout", "--out", str(tmp_path / "o2")]) == 2
    assert "VICR's splits are train, val, test" in capsys.readouterr().err and not (tmp_path / "o2").exists()


def test_images_folder_checked_and_paths_relative_to_it(tmp_path):
    images = tmp_path / "images"
    for path in ("val2014/COCO_val2014_000000000192.jpg", "Flicker8k_Dataset/1000268201_693b08cb0e.jpg"):
        (images / path).parent.mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (8, 8), (200, 10, 10)).save(images / path)
    table, report = run_import(write_vicr(tmp_path / "src"), tmp_path / "out", "--images", str(images))
    assert table.column("id").to_pylist() == ["COCO_val2014_000000000192#0", "1000268201_693b08cb0e#0"]
    assert report["refused"]["image_file_missing"] == 4


@pytest.mark.parametrize("text, says", [
    ("image,caption,split,num_ratings,ratings\n", "not this header"),
    ("", "not this header"),
])
def test_another_layout_refused_in_one_line_nothing_written(tmp_path, capsys, text, says):
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "vicr.csv").write_text(text)
    assert main(["import", "vicr", str(tmp_path / "src"), "--out", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and says in err[0] and "vicr" in err[0]
    assert not (tmp_path / "out").exists()


def test_rated_pairs_score_and_correlate(tmp_path, tiny_models):
    """The table is score input as it is: `xmdata score` scores every pair whose image it finds, and
    `xmdata evaluate correlation` reads the scores with the mean rating."""
    images = tmp_path / "images"
    for n, row in enumerate(ROWS[:6]):
        url = row.split(",")[0]
        folder = "Flicker8k_Dataset" if "validatedicr" in url else "val2014"
        (images / folder).mkdir(parents=True, exist_ok=True)
        Image.new("RGB", (40, 40), (n * 40, 255 - n * 30, 90)).save(images / folder / url.rsplit("/", 1)[-1])
    run_import(write_vicr(tmp_path / "src"), tmp_path / "out", "--images", str(images))
    spec = tiny_models["open_clip"]
    assert main(["score", str(tmp_path / "out" / "rated_pairs.parquet"), "--image-root", str(images),
                 "--clip-model", spec.name_or_path, "--out", str(tmp_path / "scored"), "--executor", "inprocess",
                 "-q"]) == 0
    scored = pq.read_table(tmp_path / "scored" / "clip_score" / "data")
    assert scored.column("status").to_pylist() == ["ok"] * 6 and "rating" in scored.column_names
    assert main(["evaluate", "correlation", str(tmp_path / "scored"), "--rating-scale",
                 "1", "5", "--out", str(tmp_path / "eval")]) == 0
    result = json.loads((tmp_path / "eval" / "correlation.json").read_text())
    assert result["per_language"]["en"]["n"] == 6, result
