"""Every image reader goes through one loader (57 item 4): the clean tiers' hashes and embeddings, MMMEB's
embed step and `train clipscore` decode in the worker's decoder processes, each with its own recipe,
and give the numbers they gave when they decoded in their own process."""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pytest
import skimage
from PIL import Image

from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
from xmdata.tasks.build import decoders
from xmdata.tasks.build.image_decode import RESOLVED_PATHS, ImageRef
from xmdata.tasks.build.image_embed import Region, embed_image_refs, embed_regions
from xmdata.tasks.clean.image_hash import hash_images, hash_one
from xmdata.tasks.clean.inputs import RESOLVED
from xmdata.tasks.clean.signatures import SignatureShard, sign_images

DATA = os.path.dirname(skimage.data.__file__)
PHOTOS = [os.path.join(DATA, name) for name in ("astronaut.png", "coffee.png", "rocket.jpg", "camera.png", "moon.png")]


def whole_rgb(path: str) -> Image.Image:
    with Image.open(path) as image:
        return image.convert("RGB")


def test_the_clean_hashes_come_from_decoder_processes_as_they_came_from_one_process():
    hashes, errors = hash_images(PHOTOS, 10**8)
    assert errors == [None] * len(PHOTOS)
    assert decoders.WORKER.processes is not None  # decoded in processes, not in this one
    assert all(np.array_equal(hashes[k], hash_one(p, 10**8)[0]) for k, p in enumerate(PHOTOS))
    _, errors = hash_images(PHOTOS[:2] + ["/nonexistent/x.png"], 300 * 300)
    assert [e.split(":")[0] for e in errors] == ["image_too_large", "image_too_large", "unreadable_image"]


@pytest.fixture()
def copy_detection(tmp_path):
    import torch

    net = torch.nn.Sequential(torch.nn.Conv2d(3, 4, 5, stride=4), torch.nn.ReLU(), torch.nn.AdaptiveAvgPool2d(4),
                              torch.nn.Flatten(), torch.nn.Linear(64, 16))
    torch.manual_seed(0)
    torch.jit.script(net.eval()).save(str(tmp_path / "tiny.torchscript.pt"))
    return ModelSpec("copy_detection", str(tmp_path / "tiny.torchscript.pt"))


@pytest.mark.parametrize("backend", ["open_clip", "copy_detection"])
def test_an_embedder_fed_by_the_decoders_gives_the_same_bits(backend, tiny_models, copy_detection):
    spec = tiny_models["open_clip"] if backend == "open_clip" else copy_detection
    embedder = get_model("embedder", spec)
    vectors, failures = embed_image_refs(embedder, [ImageRef(path=p) for p in PHOTOS], RESOLVED_PATHS, 10**8)
    assert failures == {} and sorted(vectors) == list(range(len(PHOTOS)))
    before = embedder.embed_images([whole_rgb(p) for p in PHOTOS])  # the whole-image, in-process way of before
    assert np.array_equal(np.stack([vectors[k] for k in range(len(PHOTOS))]), before)
    # A box (MMMEB's visual grounding) is cut before the model's own steps, as it was cut from the RGB image.
    box = (40, 30, 200, 150)
    vectors, _ = embed_regions(embedder, [Region(ImageRef(path=PHOTOS[0]), RESOLVED_PATHS, box)], 10**8)
    assert np.array_equal(vectors[0], embedder.embed_images([whole_rgb(PHOTOS[0]).crop(box)])[0])


def test_the_clean_embedding_tier_refuses_what_it_cannot_read_without_the_hashes(tiny_models, tmp_path):
    """With the hashes off the embedding tier reads the images itself, through the decoders, a batch at
    a time (before, the hashes were computed all the same, only to refuse these, and the tier then
    opened the shard's images whole): the same reasons the hashes gave."""
    truncated = tmp_path / "truncated.jpg"
    with Image.open(PHOTOS[2]) as rocket:
        rocket.resize((200, 300)).save(truncated, quality=90)
    truncated.write_bytes(truncated.read_bytes()[:2000])
    paths = [PHOTOS[1], str(truncated), PHOTOS[0], str(tmp_path / "gone.png")]
    table = pa.table({"id": ["a", "b", "c", "d"], "path": paths, RESOLVED: paths})
    params = SignatureShard(kind="images", image_hash=False, text_signatures=False, max_image_pixels=250_000,
                            model=tiny_models["open_clip"])
    kept, rejects = sign_images(table, params)
    assert kept.column("id").to_pylist() == ["a"] and len(kept.column("embedding")[0]) > 0
    reasons = dict(zip(rejects.column("row_id").to_pylist(), rejects.column("reason").to_pylist()))
    assert reasons == {"b": "unreadable_image", "c": "image_too_large", "d": "unreadable_image"}  # 600x400 kept, 512x512 not
    embedder = get_model("embedder", tiny_models["open_clip"])
    assert np.array_equal(np.array(kept.column("embedding")[0].as_py(), np.float32),
                          embedder.embed_images([whole_rgb(PHOTOS[1])])[0])
