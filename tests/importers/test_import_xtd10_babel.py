"""XTD10 and Babel-ImageNet as their publishers release them (adobe-research/Cross-lingual-Test-Dataset-XTD10
@d77ff16, gregor-ge/Babel-ImageNet@317c498): each trap of the real files in a tiny fixture."""
import json
import os

import pyarrow.parquet as pq
import pytest

from xmdata.schemas.contract import ContractError
from xmdata.tasks.importers.options import ImportOptions
from xmdata.tasks.importers.run import import_dataset

NAMES = ["COCO_train2014_000000061844.jpg", "COCO_train2014_000000061849.jpg", "COCO_val2014_000000000042.jpg"]
CRLF = ("es", "it", "ko", "pl", "ru", "tr", "zh")  # crowd-sourced: CRLF and no final newline


def xtd10_tree(root, jp="jp"):
    """The repository's tree for three images: XTD10/ (list, 8 languages), MIC/ (de, fr), STAIR/ (jp)."""
    folders = {**{lang: "XTD10" for lang in ("en", *CRLF)}, "de": "MIC", "fr": "MIC", jp: "STAIR"}
    for lang, folder in folders.items():
        lines = [f"{lang} caption {n}" + (" " if lang == "it" else "") for n in range(3)]  # it: a trailing space
        text = "\r\n".join(lines) if lang in CRLF else "\n".join(lines) + "\n"
        os.makedirs(root / folder, exist_ok=True)
        (root / folder / f"test_1kcaptions_{lang}.txt").write_bytes(text.encode())
    (root / "XTD10" / "test_image_names.txt").write_text("\n".join(NAMES) + "\n")
    return root


def captions(out):
    return {r["id"]: r for r in pq.read_table(out / "captions.parquet").to_pylist()}


@pytest.mark.parametrize("where", ["", "XTD10"])
def test_the_published_tree_from_its_root_or_its_xtd10_folder_gives_eleven_languages_ja_not_jp(tmp_path, where):
    source = xtd10_tree(tmp_path / "repo") / where
    report = import_dataset("xtd10", str(source), str(tmp_path / "out"))
    assert report["languages"] == sorted(["en", *CRLF, "de", "fr", "ja"])
    assert "MIC/ (de, fr)" in report["layout"] and "STAIR/ (ja from jp)" in report["layout"]
    rows = captions(tmp_path / "out")
    assert len(rows) == 33 and rows[f"{NAMES[1]}/ja"]["text"] == "jp caption 1"
    assert report["written"]["images"] == 3


def test_crlf_files_without_a_final_newline_lose_no_caption_and_keep_no_cr(tmp_path):
    import_dataset("xtd10", str(xtd10_tree(tmp_path / "repo")), str(tmp_path / "out"))
    rows = captions(tmp_path / "out")
    assert [rows[f"{n}/es"]["text"] for n in NAMES] == ["es caption 0", "es caption 1", "es caption 2"]
    assert rows[f"{NAMES[2]}/it"]["text"] == "it caption 2"  # last line, no newline, trailing space gone
    assert not any("\r" in r["text"] for r in rows.values())


def test_one_language_from_two_files_is_refused_naming_both(tmp_path):
    root = xtd10_tree(tmp_path / "repo")
    (root / "XTD10" / "test_1kcaptions_ja.txt").write_text("a\nb\nc\n")  # ja beside STAIR's jp
    with pytest.raises(ContractError, match=r"test_1kcaptions_ja\.txt and .*STAIR.*test_1kcaptions_jp\.txt|"
                                            r"STAIR.*test_1kcaptions_jp\.txt and .*test_1kcaptions_ja\.txt"):
        import_dataset("xtd10", str(root), str(tmp_path / "out"))
    assert not (tmp_path / "out").exists()


def test_coco_images_are_found_in_train2014_and_val2014(tmp_path):
    images = tmp_path / "coco"
    for name in NAMES[:2]:
        os.makedirs(images / "train2014", exist_ok=True)
        (images / "train2014" / name).write_bytes(b"x")
    report = import_dataset("xtd10", str(xtd10_tree(tmp_path / "repo")), str(tmp_path / "out"),
                            ImportOptions(images=str(images)))
    paths = pq.read_table(tmp_path / "out" / "images.parquet").column("path").to_pylist()
    assert paths == [f"train2014/{n}" for n in NAMES[:2]]  # relative to --images, as COCO keeps them
    assert report["refused"] == {"image_file_missing": 1}  # the val2014 one is not there


def test_a_three_image_fixture_says_every_count_unlike_the_publishers(tmp_path, capsys):
    from xmdata.cli import main

    report = import_dataset("xtd10", str(xtd10_tree(tmp_path / "repo")), str(tmp_path / "out"))
    counts = report["publisher_counts"]
    assert counts["source"] == "adobe-research/Cross-lingual-Test-Dataset-XTD10@d77ff16"
    assert counts["read"]["captions/ja"] == 3 and len(counts["differences"]) == 12  # images + 11 languages
    assert "captions/ja: the publisher has 1,000, read 3" in counts["differences"]
    os.remove(tmp_path / "repo" / "MIC" / "test_1kcaptions_de.txt")
    assert main(["import", "xtd10", str(tmp_path / "repo"), "--out", str(tmp_path / "cli")]) == 0
    err = capsys.readouterr().err
    assert "xtd10: 12 count(s) differ from the publisher's" in err and "images: the publisher has 1,000, read 3" in err
    differences = json.load(open(tmp_path / "cli" / "import_report.json"))["publisher_counts"]["differences"]
    assert "captions/de: the publisher has 1,000, none read (not in this source)" in differences


SYNSETS = ["n01440764", "n01443537", "n01484850"]


def imagenet(root, babel: dict):
    """Three classes, three validation images, and Babel-ImageNet's file as given."""
    os.makedirs(root, exist_ok=True)
    (root / "LOC_synset_mapping.txt").write_text("".join(f"{s} name {i}\n" for i, s in enumerate(SYNSETS)))
    (root / "LOC_val_solution.csv").write_text("ImageId,PredictionString\n" + "".join(
        f"ILSVRC2012_val_0000000{i + 1},{s} 1 1 9 9\n" for i, s in enumerate(SYNSETS)))
    (root / "babel_imagenet.json").write_text(json.dumps(babel, ensure_ascii=False))
    return root


def labels(out):
    return pq.read_table(out / "labels.parquet").to_pylist()


def test_uppercase_babel_keys_come_out_as_codes_with_the_key_kept(tmp_path):
    source = imagenet(tmp_path / "inet", {"EN": [[0, 1, 2], ["Tinca tinca", "goldfish", "man-eating shark"]],
                                          "DE": [[0, 1], ["Schleie", "Goldfisch"]], "JA": [[2], ["ホオジロザメ"]]})
    report = import_dataset("imagenet-val", str(source), str(tmp_path / "out"))
    rows = {r["id"]: r for r in labels(tmp_path / "out")}
    assert sorted(rows) == ["de/0", "de/1", "en/0", "en/1", "en/2", "ja/2"]
    assert rows["de/1"] == {"id": "de/1", "language": "de", "class_index": 1, "synset": SYNSETS[1],
                                 "label": "Goldfisch", "source_code": "DE", "label_source": "babelnet"}
    assert report["english_names"].startswith("babelnet (") and report["label_languages"] == ["de", "en", "ja"]
    assert report["publisher_counts"]["read"] == {"languages": 3, "labels/en": 3, "labels/de": 2, "labels/fr": None,
                                                  "labels/it": None, "labels/es": None}


def test_keys_that_are_no_code_or_a_taken_code_are_counted_rejects_not_a_refused_file(tmp_path):
    source = imagenet(tmp_path / "inet", {"SH": [[0], ["Som"]], "BE": [[0, 1], ["Лінь", "Залатая рыбка"]],
                                          "SIMPLE": [[0, 1, 2], ["tench", "goldfish", "shark"]],
                                          "BE_X_OLD": [[0], ["Лінь"]], "SR": [[0], ["Лињак"]]})
    report = import_dataset("imagenet-val", str(source), str(tmp_path / "out"))
    assert report["refused"] == {"language_code_taken": 2, "not_a_language_code": 3}
    refused = pq.read_table(tmp_path / "out" / "rejects.parquet").to_pylist()
    assert {(r["reason"], r["value"]) for r in refused} == {("not_a_language_code", "SIMPLE"),
                                                            ("language_code_taken", "BE_X_OLD"),
                                                            ("language_code_taken", "SH")}  # SR is sr, not SH
    kept = {(r["language"], r["source_code"]) for r in labels(tmp_path / "out")}
    assert kept == {("be", "BE"), ("sr", "SR")}


def test_english_names_replace_the_babelnet_en_and_a_short_file_is_refused_with_its_line(tmp_path, capsys):
    from xmdata.cli import main

    source = imagenet(tmp_path / "inet", {"EN": [[0, 1, 2], ["Tinca tinca", "goldfish", "man-eating shark"]],
                                          "FR": [[0], ["tanche"]]})
    (tmp_path / "clip.txt").write_text("tench\ngoldfish\ngreat white shark\n")
    assert main(["import", "imagenet-val", str(source), "--out", str(tmp_path / "out"),
                 "--english-names", str(tmp_path / "clip.txt")]) == 0
    rows = [r for r in labels(tmp_path / "out") if r["language"] == "en"]
    assert [r["label"] for r in rows] == ["tench", "goldfish", "great white shark"]
    assert {r["label_source"] for r in rows} == {"english_names"}
    report = json.load(open(tmp_path / "out" / "import_report.json"))
    assert report["english_names"].startswith("clip.txt") and report["written"]["labels"] == 4
    (tmp_path / "short.txt").write_text("tench\n\ngreat white shark\n")
    assert main(["import", "imagenet-val", str(source), "--out", str(tmp_path / "o2"),
                 "--english-names", str(tmp_path / "short.txt")]) == 2
    assert "short.txt line 2" in capsys.readouterr().err and not (tmp_path / "o2").exists()


def test_mmmeb_classification_finds_labels_in_all_five_languages_of_the_uppercase_sample(tmp_path):
    from xmdata.tasks.mmmeb.tasks import build_instances, read_source

    sample = os.path.join(os.path.dirname(__file__), "..", "..", "data", "sample", "imagenet")
    assert {"EN", "FR", "DE", "IT", "ES"} == set(json.load(open(os.path.join(sample, "babel_imagenet.json"))))
    import_dataset("imagenet-val", sample, str(tmp_path / "inet"))
    instances = build_instances({"imagenet": [read_source("imagenet", str(tmp_path / "inet"))]},
                                ["en", "fr", "de", "it", "es"], 1000)
    per_language = {}
    for q in instances.queries:
        per_language[q["language"]] = per_language.get(q["language"], 0) + 1
    assert per_language == {"en": 6, "fr": 6, "de": 6, "it": 5, "es": 6}  # IT names no class 3: one refused
