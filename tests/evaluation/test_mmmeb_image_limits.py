"""MMMEB's embed step opens images as every image reader does (57: one pixel limit for all): a path
that climbs out of its source's root and an image over the pixel limit are refused with their
reasons before any decoding; a missing file keeps this step's reason, unreadable_image."""
from __future__ import annotations

from PIL import Image

from xmdata.models.registry import get_model
from xmdata.tasks import stage_params
from xmdata.tasks.mmmeb.embed import embed_rows


def test_root_and_pixel_limit_are_checked_before_decoding(tiny_models, tmp_path, monkeypatch):
    root = tmp_path / "xm"
    root.mkdir()
    Image.new("RGB", (20, 20), (200, 30, 30)).save(root / "small.png")
    Image.new("RGB", (40, 30), (30, 200, 30)).save(root / "large.png")
    monkeypatch.setattr(stage_params, "DEFAULT_MAX_PIXELS", 20 * 20)  # the limit, made small to test it
    rows = [{"id": f"q{k}", "image": f"xm/{name}", "text": None, "task": "R", "language": "en"}
            for k, name in enumerate(["small.png", "large.png", "../escape.png", "missing.png"])]
    embedder = get_model("embedder", tiny_models["open_clip"])
    ids, vectors, rejects = embed_rows(embedder, rows, {"xm": str(root)}, "mmmeb_embed_tiny", {})
    assert ids == ["q0"] and vectors.shape[0] == 1
    assert dict(zip(rejects.column("row_id").to_pylist(), rejects.column("reason").to_pylist())) == {
        "q1": "image_too_large", "q2": "path_outside_root", "q3": "unreadable_image"}
