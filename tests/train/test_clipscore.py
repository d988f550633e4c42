"""`xmdata train clipscore` on a tiny release: captions with images in four languages (the contrastive
task) and VICR rated pairs imported with `xmdata import vicr` (contrastive + Pearson), with the tiny
open_clip model. The held-out split is shown disjoint from the training images by `xmdata contamination`,
evaluated before and after with `evaluate correlation`'s runner, and the trained folder scores with
`xmdata score --clip-model`; a release without a table is refused in one line; a run killed with
kill -9 resumes to the same weights (slow)."""
from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image
from scipy.stats import pearsonr

from xmdata.cli import main

NOUNS = {"en": ["dog", "cat", "house", "tree"], "fr": ["chien", "chat", "maison", "arbre"],
         "de": ["Hund", "Katze", "Haus", "Baum"], "es": ["perro", "gato", "casa", "árbol"]}
COLOURS = [(220, 30, 30), (30, 200, 40), (40, 60, 230), (240, 220, 30)]
COCO = "http://images.cocodataset.org/val2014/COCO_val2014_{:012d}.jpg"


def picture(path, noun: int, seed: int) -> None:
    """Noise of its own (no two images alike for a perceptual hash) around a square of the noun's colour."""
    rng = np.random.default_rng(seed)
    pixels = rng.integers(0, 256, (48, 48, 3), dtype=np.uint8)
    pixels[8:40, 8:40] = COLOURS[noun]
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.fromarray(pixels).save(path)


def build_release(folder, with_captions=True, with_ratings=True):
    """data/clip_scores.parquet (captions and translations, status ok), data/rated_pairs.parquet (a VICR
    CSV imported), images under the release folder, manifest.json."""
    from xmdata.tasks.release.manifest import write_manifest

    (folder / "data").mkdir(parents=True, exist_ok=True)
    rows = []
    for n in range(16):
        noun = n % 4
        picture(folder / "images" / f"xm-{n:02d}.png", noun, seed=n)
        for language, nouns in NOUNS.items():
            rows.append({"id": f"xm-{n:02d}@{language}", "image_path": f"images/xm-{n:02d}.png",
                         "text": f"{nouns[noun]}", "language": language, "status": "ok"})
    rows.append({"id": "refused", "image_path": "images/none.png", "text": "x", "language": "en", "status": "rejected"})
    if with_captions:
        pq.write_table(pa.Table.from_pylist(rows), folder / "data" / "clip_scores.parquet")
    lines = ["image,caption,subset,num_ratings,ratings,rating_2,rating_3,rating_4,rating_5\n"]
    for n in range(24):  # 16 train images, 8 test images, two captions each: the right noun and another
        noun, other = n % 4, (n + 1 + n // 4) % 4
        split = "train" if n < 16 else "test"
        picture(folder / "val2014" / f"COCO_val2014_{n + 1:012d}.jpg", noun, seed=100 + n)
        lines.append(f"{COCO.format(n + 1)},the {NOUNS['en'][noun]},{split},4,5,4,5,5,\n")
        lines.append(f"{COCO.format(n + 1)},the {NOUNS['en'][other]},{split},5,1,2,1,1,2\n")
    (folder / "vicr-src").mkdir(exist_ok=True)
    (folder / "vicr-src" / "vicr.csv").write_text("".join(lines))
    assert main(["import", "vicr", str(folder / "vicr-src"), "--images", str(folder), "--out",
                 str(folder / "vicr-import"), "-q"]) == 0
    if with_ratings:
        os.replace(folder / "vicr-import" / "rated_pairs.parquet", folder / "data" / "rated_pairs.parquet")
    write_manifest(str(folder), {"name": "tiny-clipscore"})
    return folder


@pytest.fixture(scope="module")
def release(tmp_path_factory):
    return build_release(tmp_path_factory.mktemp("clipscore-release"))


def train_args(release, out, tiny_models, *extra):
    return ["train", "clipscore", str(release), "--out", str(out), "--clip-model",
            tiny_models["open_clip"].name_or_path, "--learning-rate", "1e-3", "--batch-size", "8", "--epochs", "2",
            "--checkpoint-every", "2", "--executor", "inprocess", "-q", *extra]


def test_alternating_batches_never_mix_and_cycle_the_shorter_task():
    from xmdata.tasks.train.clipscore import alternating_batches
    from xmdata.tasks.train.loop import epoch_rng

    batches = alternating_batches(10, 25, 4)(0, epoch_rng(0, 0))
    assert [task for task, _ in batches] == ["captions", "rated"] * 7  # 25 rated rows: 7 batches of at most 4
    assert sorted(i for task, rows in batches if task == "rated" for i in rows) == list(range(25))
    captions = [i for task, rows in batches if task == "captions" for i in rows]
    assert set(captions) == set(range(10)) and len(captions) == 4 + 4 + 2 + 4 + 4 + 2 + 4  # cycled, drawn again
    assert batches == alternating_batches(10, 25, 4)(0, epoch_rng(0, 0))
    assert batches != alternating_batches(10, 25, 4)(1, epoch_rng(0, 1))


def test_pearson_loss_is_one_minus_scipys_r():
    import torch

    from xmdata.tasks.train.clipscore import pearson_loss

    scores, ratings = [0.1, 0.4, 0.35, 0.8, 0.2], [1.0, 3.0, 4.0, 5.0, 2.0]
    loss = pearson_loss(torch.tensor(scores, dtype=torch.float64), torch.tensor(ratings, dtype=torch.float64))
    assert loss.item() == pytest.approx(1 - pearsonr(scores, ratings).statistic, abs=1e-7)
    same = pearson_loss(torch.tensor(scores), torch.full((5,), 3.0))
    assert torch.isfinite(same) and same.item() == pytest.approx(1.0)


def test_train_evaluate_and_score_with_the_trained_folder(release, tiny_models, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(train_args(release, out, tiny_models)) == 0
    printed = capsys.readouterr().out
    # 64 caption rows / 8 = 8 caption batches an epoch, the 4 rated batches cycled: 8 steps x 2 epochs
    assert "train clipscore: 16 optimizer steps (0 resumed)" in printed
    card = json.loads((out / "model" / "model_card.json").read_text())
    manifest = json.loads((release / "manifest.json").read_text())
    assert card["release"]["release_sha256"] == manifest["release_sha256"]
    assert card["recipe"] == "multilingual-clipscore-finetuning" and card["params"]["pearson_weight"] == 1.0
    figures = card["figures"]
    assert figures["caption_rows"] == 64 and figures["rated_training_pairs"] == 32 and figures["held_out_pairs"] == 16
    assert figures["rows_without_image"] == 0 and figures["steps_per_second"] > 0
    for name in ("before", "after"):
        report = json.loads((out / "eval" / name / "correlation.json").read_text())
        assert report["overall"]["n"] == 16
        assert figures[f"held_out_pearson_{name}"] == pytest.approx(report["overall"]["pearson"])
    losses = [json.loads(line) for line in (out / "artifacts" / "losses.jsonl").read_text().splitlines()]
    assert [row["step"] for row in losses] == list(range(1, 17)) and all(np.isfinite(r["loss"]) for r in losses)
    assert (out / "artifacts" / "loss_curve.png").stat().st_size > 0
    assert oct((out / "model").stat().st_mode & 0o777) == "0o700"
    # the folder is an open_clip model `xmdata score` loads as it is, and scores the held-out pairs as training did
    assert main(["score", str(out / "eval" / "held_out.parquet"), "--image-root", str(release), "--clip-model",
                 str(out / "model"), "--out", str(tmp_path / "scored"), "--executor", "inprocess", "-q"]) == 0
    scored = pq.read_table(tmp_path / "scored" / "clip_score" / "data").sort_by("id")
    after = pq.read_table(out / "eval" / "after" / "scores.parquet").sort_by("id")
    assert scored["status"].to_pylist() == ["ok"] * 16
    assert np.allclose(scored["clip_score"].to_numpy(), after["clip_score"].to_numpy(), atol=1e-6)
    before = pq.read_table(out / "eval" / "before" / "scores.parquet").sort_by("id")
    assert not np.allclose(before["clip_score"].to_numpy(), after["clip_score"].to_numpy(), atol=1e-6)


def test_held_out_images_are_disjoint_from_training_by_contamination(release, tmp_path):
    """`xmdata contamination` (perceptual hashes of several crops and scales) finds no held-out image among
    the images the run trains on: the rated train split's and the captions'."""
    rated = pq.read_table(release / "data" / "rated_pairs.parquet")
    captions = pq.read_table(release / "data" / "clip_scores.parquet")

    def images(table, path):
        paths = sorted(set(table["image_path"].to_pylist()) - {"images/none.png"})
        pq.write_table(pa.table({"id": [p.replace("/", "_") for p in paths],
                                 "path": [str(release / p) for p in paths]}), path)
        return str(path)

    held_out = images(rated.filter(pa.compute.equal(rated["split"], "test")), tmp_path / "held_out.parquet")
    train = images(pa.concat_tables([rated.filter(pa.compute.equal(rated["split"], "train")).select(["image_path"]),
                                     captions.select(["image_path"])]), tmp_path / "train.parquet")
    assert main(["contamination", held_out, "--against", train, "--out", str(tmp_path / "check"),
                 "--executor", "inprocess", "-q"]) == 0
    report = json.loads((tmp_path / "check" / "report.json").read_text())
    assert (report["rows"], report["kept"], report["methods"]["image_hash"]["matches"]) == (8, 8, 0), report
    # and the check can fail: a training image among the held-out ones is found
    both = pq.read_table(held_out)
    pq.write_table(pa.concat_tables([both, pq.read_table(train).slice(0, 1)]), tmp_path / "leaky.parquet")
    assert main(["contamination", str(tmp_path / "leaky.parquet"), "--against", train, "--out",
                 str(tmp_path / "check2"), "--executor", "inprocess", "-q"]) == 0
    leaky = json.loads((tmp_path / "check2" / "report.json").read_text())
    assert (leaky["rows"], leaky["kept"]) == (9, 8) and leaky["methods"]["image_hash"]["matches"] >= 1, leaky


@pytest.mark.parametrize("missing, table", [("captions", "clip_scores"), ("ratings", "rated_pairs")])
def test_a_release_without_a_table_is_refused_in_one_line(tmp_path, tiny_models, capsys, missing, table):
    folder = build_release(tmp_path / "rel", with_captions=missing != "captions", with_ratings=missing != "ratings")
    out = tmp_path / "run"
    capsys.readouterr()  # what the import printed
    assert main(train_args(folder, out, tiny_models)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"no {table} table" in err[0], err
    assert not out.exists()


def _sha256(path) -> str:
    return hashlib.sha256(open(path, "rb").read()).hexdigest()


@pytest.mark.slow  # three training processes, one killed with SIGKILL mid-run
def test_a_run_killed_with_sigkill_resumes_to_the_same_weights(release, tiny_models, tmp_path):
    code = ("import sys; from xmdata.tasks.train.clipscore import train_clipscore; "
            "from xmdata.tasks.train.clipscore_params import ClipscoreParams; "
            "p = ClipscoreParams(clip_model=sys.argv[3], learning_rate=1e-3, "
            "loop={'epochs': 6, 'batch_size': 4, 'accumulation': 2, 'checkpoint_every': 1}); "
            "train_clipscore(sys.argv[1], p, sys.argv[2])")

    def start(out):
        return subprocess.Popen([sys.executable, "-c", code, str(release), str(out),
                                 tiny_models["open_clip"].name_or_path], stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE)

    whole = start(tmp_path / "whole")
    assert whole.wait(timeout=600) == 0, whole.stderr.read().decode()[-2000:]
    cut = start(tmp_path / "cut")
    log = tmp_path / "cut" / "artifacts" / "losses.jsonl"
    deadline = time.time() + 300
    while time.time() < deadline and not (log.exists() and len(log.read_text().splitlines()) >= 5):
        time.sleep(0.05)
    os.kill(cut.pid, signal.SIGKILL)
    assert cut.wait(timeout=30) == -signal.SIGKILL
    assert not (tmp_path / "cut" / "model").exists(), "the run finished before it was killed"
    again = start(tmp_path / "cut")
    assert again.wait(timeout=600) == 0, again.stderr.read().decode()[-2000:]
    weights = "model/open_clip_model.safetensors"
    assert _sha256(tmp_path / "cut" / weights) == _sha256(tmp_path / "whole" / weights)
    assert (tmp_path / "cut" / "artifacts" / "losses.jsonl").read_text() == \
        (tmp_path / "whole" / "artifacts" / "losses.jsonl").read_text()
    card = json.loads((tmp_path / "cut" / "model" / "model_card.json").read_text())
    assert card["figures"]["held_out_pearson_after"] == pytest.approx(
        json.loads((tmp_path / "whole" / "model" / "model_card.json").read_text())["figures"]["held_out_pearson_after"])
