"""Image paths are judged by their text (`..` or an absolute path out of the image root is refused),
links are followed wherever they lead (a linked image root, the Hugging Face cache's per-file links),
and an input none of whose pairs could score is refused in one line before anything is written."""
import json
import os
import shutil

import pytest
from PIL import Image
from support.cli_in_process import run_xmdata

from xmdata.cli import main
from xmdata.data import sample_path
from xmdata.tasks.build.image_decode import ImageRef, open_image

SAMPLE = os.path.dirname(sample_path("images.csv"))


def opened(root, path):
    image = open_image(ImageRef(path=str(path)), str(root), max_pixels=10 ** 6)
    return getattr(image, "reason", None) or image.size


def test_paths_are_judged_by_their_text_and_links_are_followed(tmp_path):
    real, elsewhere = tmp_path / "disk" / "photos", tmp_path / "elsewhere" / "deep"
    (real / "sub").mkdir(parents=True)
    elsewhere.mkdir(parents=True)
    Image.new("RGB", (4, 3)).save(real / "a.png")
    Image.new("RGB", (5, 3)).save(real / "sub" / "b.png")
    Image.new("RGB", (6, 3)).save(elsewhere.parent / "a.png")  # beside the linked folder's target
    Image.new("RGB", (7, 3)).save(tmp_path / "x.png")
    os.symlink(real, tmp_path / "photos")  # the image root is a link to the real folder
    os.symlink(elsewhere, real / "linked")  # a folder link inside it, to somewhere else
    os.symlink(elsewhere.parent / "a.png", real / "c.png")  # a file link out of it
    root = tmp_path / "photos"
    assert opened(root, "a.png") == (4, 3) and opened(root, "sub/b.png") == (5, 3)
    assert opened(root, "sub/../a.png") == (4, 3)  # `..` that stays inside
    assert opened(root, "c.png") == (6, 3)  # followed wherever it leads
    # `linked/..` is the root's own folder by its text: the OS is never asked to climb the link's parent.
    assert opened(root, "linked/../a.png") == (4, 3)
    assert opened(root, root / "a.png") == (4, 3) and opened(root, real / "a.png") == (4, 3)  # absolute, inside
    for climbing in ("../x.png", "sub/../../x.png", "linked/../../x.png", str(tmp_path / "x.png"),
                     str(elsewhere.parent / "a.png")):
        assert opened(root, climbing) == "path_outside_root", climbing


def hugging_face_snapshot(tmp_path, names):
    """The hub cache's layout: snapshots/<revision>/<path> are relative links to blobs/<sha256>."""
    repo = tmp_path / "hub" / "datasets--x--pictures"
    (repo / "blobs").mkdir(parents=True)
    snapshot = repo / "snapshots" / "0123abcd"
    for i, name in enumerate(names):
        blob = repo / "blobs" / f"{i:064x}"
        shutil.copy(os.path.join(SAMPLE, name), blob)
        link = snapshot / name
        link.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(os.path.relpath(blob, link.parent), link)
    return snapshot


def write_pairs(path, image_paths, text="a red bicycle"):
    path.write_text("".join(json.dumps({"id": f"p{i}", "image_path": p, "text": text}) + "\n"
                            for i, p in enumerate(image_paths)))
    return path


def test_score_follows_a_linked_image_root_and_per_file_links(tmp_path, tiny_models, cli_env):
    names = [f"images/img-{i:04d}.png" for i in range(6)]
    (tmp_path / "release").mkdir()
    os.symlink(os.path.join(SAMPLE, "images"), tmp_path / "release" / "images")  # how big folders are kept
    snapshot = hugging_face_snapshot(tmp_path, names)
    clip = tiny_models["open_clip"].name_or_path
    for root in (tmp_path / "release", snapshot):
        pairs = write_pairs(tmp_path / f"{root.name}.jsonl", names + ["../images.csv"])
        out = tmp_path / f"out-{root.name}"
        result = run_xmdata(["score", pairs, "--image-root", root, "--clip-model", clip, "--out", out], cli_env)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "scoring: 6 of 7 pairs scored" in result.stdout, result.stdout
        summary = json.load(open(out / "summary.json"))
        assert summary["stages"]["clip_score"]["rejected"] == {"path_outside_root": 1}


def refused(argv, capsys, out):
    assert main([*map(str, argv), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("xmdata: error: ") and "Traceback" not in err, err
    assert not out.exists()
    return lines[0]


def test_score_refuses_an_input_none_of_whose_images_is_reachable(tmp_path, tiny_models, capsys):
    clip = tiny_models["open_clip"].name_or_path
    capsys.readouterr()
    empty_root = tmp_path / "empty"
    empty_root.mkdir()
    names = [f"images/img-{i:04d}.png" for i in range(3)]
    pairs = write_pairs(tmp_path / "pairs.jsonl", names + names)  # 3 distinct paths, each twice
    line = refused(["score", pairs, "--image-root", empty_root, "--clip-model", clip], capsys, tmp_path / "o1")
    assert "none of the 3 image paths is a readable file under the image root" in line and "missing_image" in line
    assert "'images/img-0000.png'" in line and str(empty_root) in line
    line = refused(["score", pairs, "--clip-model", clip], capsys, tmp_path / "o2")  # root: the input's folder
    assert "missing_image" in line and str(tmp_path) in line
    climbing = write_pairs(tmp_path / "up.jsonl", ["../a.png", "/etc/passwd"])
    line = refused(["score", climbing, "--image-root", empty_root, "--clip-model", clip], capsys, tmp_path / "o3")
    assert "none of the 2 image paths climbs out of the image root" in line and "path_outside_root" in line
    no_text = write_pairs(tmp_path / "blank.jsonl", names, text="  ")
    line = refused(["score", no_text, "--image-root", SAMPLE, "--clip-model", clip], capsys, tmp_path / "o4")
    assert "no pair can be scored (3 empty_text)" in line
    # One image found among many missing ones is enough: the run goes on (and rejects the rest).
    from xmdata.tasks.scoring.input import check_some_pair_scorable, read_score_input

    mixed = write_pairs(tmp_path / "mixed.jsonl", ["images/none.png"] * 3 + ["images/img-0002.png"])
    check_some_pair_scorable(read_score_input(str(mixed)), SAMPLE, "mixed.jsonl")


def test_a_release_whose_scoring_images_are_all_missing_is_refused_before_anything(tmp_path, tiny_models, capsys):
    capsys.readouterr()
    shutil.copy(sample_path("captions.jsonl"), tmp_path / "captions.jsonl")
    shutil.copy(sample_path("images.csv"), tmp_path / "images.csv")  # without its images/ folder
    (tmp_path / "r.yaml").write_text("name: x\nscoring: {input: captions.jsonl, images: images.csv, "
                                     "clip_model: \"tiny:open_clip\"}\n")
    line = refused(["release", "--config", tmp_path / "r.yaml"], capsys, tmp_path / "out")
    assert "scoring (" in line and "is a readable file under the image root" in line and "missing_image" in line
    os.symlink(SAMPLE + "/images", tmp_path / "images")  # the folder, linked in: the preflight passes
    from xmdata.flows.release_preflight import checked_release

    checked_release(str(tmp_path / "r.yaml"))
