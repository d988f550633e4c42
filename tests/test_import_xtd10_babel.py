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
    assert [os.path.relpath(p, images) if os.path.isabs(p) else p for p in paths][-2:] == [
        f"train2014/{n}" for n in NAMES[:2]] or all("train2014/" in p for p in paths)
    assert len(paths) == 2 and report["refused"] == {"image_file_missing": 1}  # the val2014 one is not there


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
    assert "differ from the publisher's" in err and "captions/de: the publisher has 1,000, none read" in err
