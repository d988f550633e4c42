"""CLIP scoring: the score formulas against numpy, every image guard, truncation, embeddings,
shard independence, the input contract and the CLI's exit code. Tiny open_clip, CPU, no network."""
import io
import os
import random
import threading

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from xmdata.cli import main
from xmdata.schemas import ContractError
from xmdata.tasks.build.batch_loader import PrefetchingLoader
from xmdata.tasks.scoring.clip_scores import clip_score, ref_clip_score
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.scoring.input import demo_score_input, read_score_input
from xmdata.tasks.stage_params import ScoringParams


def reference_scores(image, text, refs, w=2.5):
    """Hessel et al. written out for one pair, straight from the definitions."""
    def cos(a, b):
        return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))

    clip = w * max(cos(image, text), 0.0)
    if not len(refs):
        return clip, None
    best = max(max(cos(text, r) for r in refs), 0.0)
    return clip, (2 * clip * best / (clip + best) if clip + best > 0 else 0.0)


def test_clip_score_and_ref_clip_score_match_numpy_reference():
    rng = np.random.default_rng(0)
    n, dim = 50, 24
    images, texts = rng.normal(size=(n, dim)), rng.normal(size=(n, dim))  # not normalised on purpose
    refs_of = [rng.normal(size=(k, dim)) for k in rng.integers(0, 5, size=n)]
    refs_of[0] = np.stack([-texts[0], -2 * texts[0]])  # only negative cosines: the reference term is 0
    owners = np.array([i for i, refs in enumerate(refs_of) for _ in refs], dtype=np.int64)
    flat = np.concatenate([r for r in refs_of if len(r)])
    for w in (2.5, 1.0):
        scores = clip_score(images, texts, w)
        ref_scores = ref_clip_score(scores, texts, flat, owners)
        for i in range(n):
            want_clip, want_ref = reference_scores(images[i], texts[i], refs_of[i], w)
            assert scores[i] == pytest.approx(want_clip, abs=1e-6)
            assert np.isnan(ref_scores[i]) if want_ref is None else ref_scores[i] == pytest.approx(want_ref, abs=1e-6)
    assert ref_scores[0] == 0.0 and np.isnan(ref_scores).sum() == sum(len(r) == 0 for r in refs_of)
    assert (scores >= 0).all() and (scores <= 1.0).all() and (scores == 0).any()  # w = 1 here; clamped at 0


def write_png(path, size=(40, 30), colour=(200, 30, 30)):
    Image.new("RGB", size, colour).save(path)
    return path


def png_bytes(size=(20, 20), colour=(10, 200, 10), mode="RGB"):
    buffer = io.BytesIO()
    Image.new(mode, size, colour if mode == "RGB" else 128).save(buffer, format="PNG")
    return buffer.getvalue()


@pytest.fixture
def image_root(tmp_path):
    root = tmp_path / "root"
    (root / "img").mkdir(parents=True)
    write_png(root / "img" / "red.png")
    write_png(root / "img" / "big.png", size=(200, 200))
    (root / "img" / "empty.png").write_bytes(b"")
    (root / "img" / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    (root / "img" / "truncated.png").write_bytes(png_bytes(size=(64, 64))[:60])
    write_png(tmp_path / "outside.png")
    os.symlink(tmp_path / "outside.png", root / "img" / "link-out.png")
    os.symlink(root / "img" / "red.png", root / "img" / "link-in.png")
    return root


CASES = [  # id, image_path, image_bytes, text, expected reason (None: scored)
    ("ok-path", "img/red.png", None, "a red square", None),
    ("missing", "img/none.png", None, "a red square", "missing_image"),
    ("empty-file", "img/empty.png", None, "a red square", "empty_image_file"),
    ("corrupt", "img/corrupt.png", None, "a red square", "corrupt_image"),
    ("truncated", "img/truncated.png", None, "a red square", "corrupt_image"),
    ("too-large", "img/big.png", None, "a red square", "image_too_large"),
    ("dotdot", "../outside.png", None, "a red square", "path_outside_root"),
    ("link-out", "img/link-out.png", None, "a red square", None),  # links are followed wherever they lead
    ("folder", "img", None, "a red square", "missing_image"),
    ("link-in", "img/link-in.png", None, "a red square", None),
    ("ok-bytes", None, png_bytes(), "a green square", None),
    ("ok-bytes-grey", None, png_bytes(mode="L"), "a grey square", None),
    ("bad-bytes", None, b"GIF89a broken", "a green square", "corrupt_image"),
    ("empty-bytes", None, b"", "a green square", "empty_image_file"),
    ("no-image", None, None, "a red square", "no_image_reference"),
    ("empty-text", "img/red.png", None, "   ", "empty_text"),
    ("ok-last", "img/red.png", None, "ein rotes Quadrat", None),
]


def cases_table(image_root):
    rows = CASES + [("abs-out", str(image_root.parent / "outside.png"), None, "x", "path_outside_root"),
                    ("abs-in", str(image_root / "img" / "red.png"), None, "a red square", None)]
    return pa.table({"id": [r[0] for r in rows], "image_path": pa.array([r[1] for r in rows], pa.string()),
                     "image_bytes": pa.array([r[2] for r in rows], pa.binary()),
                     "text": [r[3] for r in rows]}), {r[0]: r[4] for r in rows}


def run_stage_fn(table, spec, root, references_column=None, **options):
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"),
                           **{"batch_size": 4, "max_image_pixels": 100 * 100, **options})
    assert params.spec() == spec  # the tiny model, named as a user names it
    stage = clip_score_stage(params, spec, str(root), references_column)
    return stage.fn(table, stage.params)


def test_every_bad_image_is_refused_with_its_reason_and_the_shard_goes_on(tiny_models, image_root):
    table, expected = cases_table(image_root)
    kept, rejects = run_stage_fn(table, tiny_models["open_clip"], image_root)
    assert kept.num_rows == table.num_rows and kept.column("id").to_pylist() == table.column("id").to_pylist()
    assert "image_bytes" not in kept.column_names
    rows = {r["id"]: r for r in kept.to_pylist()}
    for row_id, reason in expected.items():
        row = rows[row_id]
        if reason is None:
            assert row["status"] == "ok" and row["error_message"] is None and 0 <= row["clip_score"] <= 2.5
        else:
            assert row["status"] == "rejected" and row["error_message"] and row["clip_score"] is None, row_id
    refused = {r["row_id"]: r for r in rejects.to_pylist()}
    assert {k: v["reason"] for k, v in refused.items()} == {k: v for k, v in expected.items() if v}
    assert {r["stage"] for r in refused.values()} == {"clip_score"}
    assert refused["dotdot"]["value"] == "../outside.png" and refused["empty-text"]["value"] == "   "
    assert "200x200 pixels, limit 10000" in rows["too-large"]["error_message"]
    # The same image and text by relative path, by links in and out of the root and by absolute path: one score.
    for other in ("link-in", "link-out", "abs-in"):
        assert rows[other]["clip_score"] == pytest.approx(rows["ok-path"]["clip_score"], abs=1e-6)


def test_scores_and_embeddings_match_the_model_on_the_same_inputs(tiny_models, image_root):
    from xmdata.models.registry import get_model

    scorer = get_model("clip_scorer", tiny_models["open_clip"])
    refs = [["a red square", "un carré"], [], None, ["   "]]
    table = pa.table({"id": ["a", "b", "c", "d"], "image_path": ["img/red.png"] * 3 + ["img/link-in.png"],
                      "text": ["a red square", "le chien court", "un carré rouge", "rot"], "refs": refs})
    kept, _ = run_stage_fn(table, tiny_models["open_clip"], image_root, references_column="refs",
                           embeddings="float32", weight=2.0)
    image = Image.open(image_root / "img" / "red.png").convert("RGB")
    image_emb, text_emb = scorer.predict(scorer.prepare([image], table.column("text").to_pylist()))
    _, ref_emb = scorer.predict(scorer.prepare([], ["a red square", "un carré"]))
    for i, row in enumerate(kept.to_pylist()):
        want_clip, want_ref = reference_scores(image_emb[0], text_emb[i], ref_emb if i == 0 else [], w=2.0)
        assert row["clip_score"] == pytest.approx(want_clip, abs=1e-6)
        assert row["ref_clip_score"] == (None if want_ref is None else pytest.approx(want_ref, abs=1e-6))
        np.testing.assert_allclose(row["image_embedding"], image_emb[0], atol=1e-6)
        np.testing.assert_allclose(row["text_embedding"], text_emb[i], atol=1e-6)
    assert kept.column("refs_truncated").to_pylist() == [False, None, None, None]
    assert kept.schema.field("image_embedding").type == pa.list_(pa.float32(), scorer.embed_dim)
    half, _ = run_stage_fn(table, tiny_models["open_clip"], image_root, embeddings="float16")
    assert half.schema.field("text_embedding").type == pa.list_(pa.float16(), scorer.embed_dim)
    np.testing.assert_allclose(np.array(half.column("text_embedding").to_pylist(), dtype=np.float32), text_emb, atol=1e-3)
    assert half.column("ref_clip_score").null_count == 4  # no references column, no RefCLIPScore


def test_preprocess_in_two_parts_gives_the_same_pixels(tiny_models, image_root):
    import torch

    from xmdata.models.registry import get_model

    scorer = get_model("clip_scorer", tiny_models["open_clip"])
    image_part, tensor_part = scorer.preprocess_stages()
    image = Image.open(image_root / "img" / "big.png").convert("RGB")
    assert isinstance(image_part(image), Image.Image)  # loader threads run no torch op
    assert torch.equal(tensor_part(image_part(image)), scorer.preprocess(image))


def test_long_texts_are_truncated_and_flagged_and_the_prefix_counts(tiny_models, image_root):
    long = "le petit chat rouge voit l'eau dans la maison " * 6
    table = pa.table({"id": ["short", "long"], "image_path": ["img/red.png"] * 2,
                      "text": ["a red square", long], "refs": [[long], ["a red square"]]})
    kept, _ = run_stage_fn(table, tiny_models["open_clip"], image_root, references_column="refs")
    assert kept.column("text_truncated").to_pylist() == [False, True]
    assert kept.column("refs_truncated").to_pylist() == [True, False]
    prefixed, _ = run_stage_fn(table, tiny_models["open_clip"], image_root, prefix="A photo depicts")
    assert prefixed.column("clip_score")[0].as_py() != kept.column("clip_score")[0].as_py()


def test_scores_do_not_depend_on_shards_batches_or_order(tiny_models, image_root):
    rng = random.Random(0)
    colours = [(rng.randrange(256), rng.randrange(256), rng.randrange(256)) for _ in range(12)]
    for i, colour in enumerate(colours):
        write_png(image_root / "img" / f"c{i}.png", colour=colour)
    words = ["rouge", "red", "rot", "красный", "赤い", "laranja", "blue", "chat"]
    table = pa.table({"id": [f"p{i}" for i in range(30)], "image_path": [f"img/c{i % 12}.png" for i in range(30)],
                      "text": [f"{words[i % 8]} {words[(i * 3) % 8]} {i}" for i in range(30)],
                      "refs": [[words[i % 8], words[(i + 1) % 8]] for i in range(30)]})
    whole, _ = run_stage_fn(table, tiny_models["open_clip"], image_root, references_column="refs", batch_size=32)
    order = list(range(30))
    rng.shuffle(order)
    parts = [run_stage_fn(table.take(order[k::3]), tiny_models["open_clip"], image_root,
                          references_column="refs", batch_size=5)[0] for k in range(3)]
    split = {r["id"]: r for part in parts for r in part.to_pylist()}
    for row in whole.to_pylist():
        for column in ("clip_score", "ref_clip_score"):
            assert split[row["id"]][column] == pytest.approx(row[column], abs=1e-6)


def test_loader_decodes_the_next_batch_while_this_one_is_used():
    next_batch_loading = threading.Event()

    def load(item):
        if item == 2:  # first item of the second batch
            next_batch_loading.set()
        return item * 10

    batches = []
    for batch in PrefetchingLoader(list(range(5)), 2, load, decoders=2):
        if not batches:
            assert next_batch_loading.wait(timeout=10), "batch 2 did not load while batch 1 was in use"
        batches.append(batch)
    assert batches == [[0, 10], [20, 30], [40]]


def test_input_contract_refuses_broken_pairs_tables(tmp_path):
    with pytest.raises(ContractError, match="image_path"):
        read_score_input(pa.table({"id": ["a"], "text": ["t"]}))
    with pytest.raises(ContractError, match="'refs'.*required column is missing"):
        read_score_input(pa.table({"id": ["a"], "text": ["t"], "image_path": ["x.png"]}), "refs")
    csv = tmp_path / "pairs.csv"
    csv.write_text("id,text,image_path,refs\na,t,x.png,r\n")
    with pytest.raises(ContractError, match="refs"):
        read_score_input(str(csv), "refs")
    table = read_score_input(pa.table({"id": ["a"], "text": ["t"], "image_bytes": [b"x"], "refs": [["r"]]}), "refs")
    assert table.schema.field("refs").type == pa.list_(pa.string()) and table.column("image_path").null_count == 1


def test_demo_input_joins_sample_captions_to_their_images():
    pairs, root = demo_score_input()
    assert pairs.num_rows == 43 and set(pairs.column_names) >= {"id", "image_path", "text", "image_id"}
    assert all(os.path.isfile(os.path.join(root, p)) for p in pairs.column("image_path").to_pylist())


def test_cli_broken_pairs_input_exits_2_and_writes_nothing(tmp_path, capsys, tiny_models):
    bad = tmp_path / "pairs.jsonl"
    bad.write_text('{"id": "a", "caption": "no text column", "image_path": "x.png"}\n')
    out = tmp_path / "out"
    code = main(["score", str(bad), "--clip-model", tiny_models["open_clip"].name_or_path, "--out", str(out)])
    assert code == 2 and "'text'" in capsys.readouterr().err and not out.exists()
    good = tmp_path / "good.jsonl"
    good.write_text('{"id": "a", "text": "a red square", "image_path": "x.png"}\n')
    assert main(["score", str(good), "--clip-model", "ViT-B-32", "--out", str(out)]) == 2
    assert "needs --pretrained" in capsys.readouterr().err and not out.exists()
