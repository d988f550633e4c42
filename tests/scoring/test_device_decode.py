"""decode_mode "device": the decoders send a JPEG's bytes, the model's process decodes, resizes and crops
it with torchvision's tensor ops (on a CPU model here; nvjpeg on CUDA in the gpu test). Its pixels and
scores stay within stated tolerances of exact mode on real photographs; every other image, and every
bad one, comes out as in exact mode; a JPEG decode_jpeg refuses goes to PIL, and the batch goes on."""
import logging
import shutil

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from support.bad_inputs import bad_images
from xmdata.models.loader_facts import LoaderFacts
from xmdata.models.registry import get_model
from xmdata.tasks.build.image_decode import ImageRef, decode_image
from xmdata.tasks.scoring.score import ScoreShard, clip_score_stage, image_loader
from xmdata.tasks.stage_params import ScoringParams

# Normalised pixel units (÷255, then ÷ open_clip's std, ~0.27: one uint8 level is ~0.015). On the CPU,
# torchvision's libjpeg decodes as PIL's does and torch's antialiased resize follows PIL's, rounded once
# more: these photographs measured mean |d| ~1e-5, max 0.015 (one level) at the tiny model's 32 px, and
# CLIPScore max |d| ~1e-5 (bench/device_decode.py: 96 photographs, max 1.9e-4).
PIXELS_MEAN, PIXELS_MAX, SCORE_MAX = 1e-3, 0.05, 1e-3
# nvjpeg's IDCT and chroma upsampling are not libjpeg's, and were not measured here (no GPU was lent): looser.
CUDA_PIXELS_MEAN, CUDA_PIXELS_MAX = 0.01, 0.15


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    """scikit-image's photographs at 1600x1200 JPEG, quality 90 (bench/scoring_loader.py makes 400 so), one
    grey (an L JPEG), one portrait, and a PNG."""
    import skimage.data as skimage_data

    root = tmp_path_factory.mktemp("device-photos")
    names = []
    for name, size in (("astronaut", (1600, 1200)), ("coffee", (1600, 1200)), ("chelsea", (1600, 1200)),
                       ("rocket", (1200, 1600)), ("camera", (1600, 1200)), ("retina", (333, 517))):
        image = Image.fromarray(getattr(skimage_data, name)()).resize(size, Image.Resampling.BICUBIC)
        image.save(root / f"{name}.jpg", quality=90)
        names.append(f"{name}.jpg")
    Image.fromarray(skimage_data.coffee()).resize((400, 300)).save(root / "coffee.png")
    return root, [*names, "coffee.png"]


@pytest.fixture(scope="module")
def scorer(tiny_models):
    return get_model("clip_scorer", tiny_models["open_clip"])


def shard(spec, root, mode, max_pixels=10**8) -> ScoreShard:
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"), decode_mode=mode,
                           decoders=2, max_image_pixels=max_pixels)
    return ScoreShard(params=params, model=spec, image_root=str(root), references_column=None)


def loaded(model, spec, root, names, mode, **options):
    """What the stage's loader hands the model, mode `mode`: its decoder processes, 4 images a batch."""
    facts = LoaderFacts(model.decode_recipe(), 4)
    with image_loader([ImageRef(path=n) for n in names], shard(spec, root, mode, **options), facts) as loader:
        return [d for batch in loader for d in batch]


def pixels(model, decoded):
    return model.pixels_from_uint8([d.pixels for d in decoded])


def stage_scores(spec, root, names, mode):
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"), batch_size=4,
                           decode_mode=mode)
    stage = clip_score_stage(params, spec, str(root))
    table = pa.table({"id": [f"r{i}" for i in range(len(names))], "image_path": names,
                      "text": [f"a photograph, number {i}" for i in range(len(names))]})
    kept, rejects = stage.fn(table, stage.params)
    return stage, kept, rejects


def test_device_mode_sends_jpeg_bytes_and_stays_close_to_exact_on_real_photographs(scorer, photos, tiny_models):
    import torch

    root, names = photos
    spec = tiny_models["open_clip"]
    raw = [decode_image(ImageRef(path=n), str(root), 10**8, scorer.decode_recipe(), raw_jpeg=True) for n in names]
    sent = [isinstance(r.pixels, bytes) and r.pixels == (root / n).read_bytes() for r, n in zip(raw, names)]
    assert sent == [True] * 6 + [False]  # each JPEG's own file bytes; the PNG decoded
    device = loaded(scorer, spec, root, names, "device")
    exact = loaded(scorer, spec, root, names, "exact")
    assert [type(d.pixels).__name__ for d in device] == ["Tensor"] * 6 + ["ndarray"]  # the PNG: PIL's
    ours, theirs = pixels(scorer, device), pixels(scorer, exact)
    assert ours.shape == theirs.shape and ours.dtype == theirs.dtype
    assert torch.equal(ours[-1], theirs[-1])
    diff = (ours - theirs).abs()
    assert diff.mean() < PIXELS_MEAN and diff.max() < PIXELS_MAX, (diff.mean(), diff.max())
    # In the stage: its own params hash (and memo key), CLIPScores within the tolerance.
    exact_stage, exact_kept, _ = stage_scores(spec, root, names, "exact")
    device_stage, device_kept, rejects = stage_scores(spec, root, names, "device")
    assert exact_stage.params_hash != device_stage.params_hash and rejects.num_rows == 0
    scores = [np.array(k.column("clip_score").to_pylist()) for k in (exact_kept, device_kept)]
    assert np.abs(scores[0] - scores[1]).max() < SCORE_MAX


def test_bad_and_unusual_images_come_out_of_device_mode_as_in_exact_mode(scorer, tiny_models, tmp_path):
    import torch

    spec = tiny_models["open_clip"]
    names = bad_images(tmp_path)
    recipe = scorer.decode_recipe()
    sent = {n for n in names
            if isinstance(decode_image(ImageRef(path=n), str(tmp_path), 10**8, recipe, raw_jpeg=True).pixels, bytes)}
    assert sent == {"plain.jpg", "rotated.jpg"}  # not CMYK, not truncated, not over the pixel limit
    device = loaded(scorer, spec, tmp_path, names, "device")
    exact = loaded(scorer, spec, tmp_path, names, "exact")
    assert [d.reason for d in device] == [d.reason for d in exact]
    assert {n: d.reason for n, d in zip(names, device) if d.reason} == {
        "truncated.jpg": "corrupt_image", "bomb.png": "image_too_large", "bomb.jpg": "image_too_large"}
    for name, ours, theirs in zip(names, device, exact):
        if theirs.pixels is None:
            continue
        a, b = pixels(scorer, [ours])[0], pixels(scorer, [theirs])[0]
        if name in sent:  # rotated.jpg as stored, as exact decodes it: rotated, this gradient would differ
            assert (a - b).abs().max() < PIXELS_MAX, name
        else:
            assert torch.equal(a, b), name
    # A JPEG over the pixel limit its header declares: refused before its bytes go anywhere.
    over = loaded(scorer, spec, tmp_path, ["plain.jpg"], "device", max_pixels=300 * 200 - 1)
    assert over[0].reason == "image_too_large"


def picky_decode_jpeg(refused: bytes):
    """torchvision's decode_jpeg, refusing any call that holds `refused` (a whole list, as it does)."""
    from torchvision.io import decode_jpeg

    def decode(input, *args, **kwargs):
        items = input if isinstance(input, list) else [input]
        if any(bytes(t.numpy()) == refused for t in items):
            raise RuntimeError("refused for the test")
        return decode_jpeg(input, *args, **kwargs)
    return decode


def test_a_jpeg_decode_jpeg_refuses_goes_to_pil_and_the_rest_of_its_batch_is_unaffected(scorer, photos, tiny_models,
                                                                                       tmp_path, monkeypatch):
    import torch
    import torchvision.io

    source, photo_names = photos
    spec = tiny_models["open_clip"]
    for name in photo_names:
        shutil.copyfile(source / name, tmp_path / name)
    shutil.copyfile(source / "coffee.jpg", tmp_path / "refused.jpg")  # a good JPEG decode_jpeg will refuse
    data = (source / "chelsea.jpg").read_bytes()
    scan = data.index(b"\xff\xda")
    # Whole as far as the decoders' checks go (a JPEG header, RGB, ends with EOI), refused by PIL and libjpeg.
    (tmp_path / "no-scan.jpg").write_bytes(data[:scan] + b"\xff\xd9")
    noise = np.random.default_rng(0).integers(0, 256, len(data) - scan - 40, dtype=np.uint8).tobytes()
    (tmp_path / "garbled.jpg").write_bytes(data[:scan + 20] + noise + b"\xff\xd9")
    names = ["astronaut.jpg", "refused.jpg", "camera.jpg", "garbled.jpg", "rocket.jpg", "coffee.png",
             "no-scan.jpg", "chelsea.jpg"]
    calm = loaded(scorer, spec, tmp_path, names, "device")
    exact = loaded(scorer, spec, tmp_path, names, "exact")
    monkeypatch.setattr(torchvision.io, "decode_jpeg", picky_decode_jpeg((tmp_path / "refused.jpg").read_bytes()))
    device = loaded(scorer, spec, tmp_path, names, "device")
    assert len(device) == len(names)
    assert {n: d.reason for n, d in zip(names, device) if d.reason} == {
        "garbled.jpg": "corrupt_image", "no-scan.jpg": "corrupt_image"}
    assert [d.reason for d in device] == [d.reason for d in exact] == [d.reason for d in calm]
    refused = names.index("refused.jpg")
    assert isinstance(device[refused].pixels, np.ndarray)
    assert np.array_equal(device[refused].pixels, exact[refused].pixels)  # PIL's: exact's bits
    for i, name in enumerate(names):
        if name not in ("refused.jpg", "garbled.jpg", "no-scan.jpg"):
            assert torch.equal(pixels(scorer, [device[i]]), pixels(scorer, [calm[i]])), name
    # The stage: the JPEGs nobody decodes are rejected with their reason, every other row scored.
    _, kept, rejects = stage_scores(spec, tmp_path, names, "device")
    assert kept.num_rows == len(names)
    assert dict(zip(rejects.column("value").to_pylist(), rejects.column("reason").to_pylist())) == {
        "garbled.jpg": "corrupt_image", "no-scan.jpg": "corrupt_image"}


def test_a_transform_with_no_tensor_twin_decodes_as_exact_and_says_why(tiny_models, photos, caplog):
    from torchvision.transforms import InterpolationMode, Resize

    from xmdata.models.open_clip_scorer import OpenClipScorer

    root, names = photos
    spec = tiny_models["open_clip"]
    model = OpenClipScorer(spec)  # a model of its own: the registry's is shared
    model.load()
    steps = model.preprocess.transforms
    steps[0] = Resize(steps[0].size, interpolation=InterpolationMode.LANCZOS)  # torch resizes no tensor so
    assert model.tensor_recipe() is None
    with caplog.at_level(logging.INFO, logger="xmdata.tasks.scoring.score"):
        device = loaded(model, spec, root, names, "device")
    assert [r.getMessage() for r in caplog.records if "no tensor twin" in r.getMessage()] == [
        "clip_score: decode_mode device decodes as exact mode: the transform has a step with no tensor twin "
        "(Resize, CenterCrop, Convert)"]  # once for the shard
    exact = loaded(model, spec, root, names, "exact")
    assert all(np.array_equal(d.pixels, e.pixels) for d, e in zip(device, exact))


@pytest.mark.gpu
def test_on_cuda_device_mode_decodes_with_nvjpeg_onto_the_gpu_close_to_the_cpu(tiny_models, photos):
    spec = tiny_models["open_clip"]
    cuda_spec = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"), device="cuda",
                              autocast="none").spec()
    cuda, cpu = get_model("clip_scorer", cuda_spec), get_model("clip_scorer", spec)
    root, names = photos
    on_gpu = loaded(cuda, cuda_spec, root, names, "device")
    assert [d.pixels.device.type for d in on_gpu[:-1]] == ["cuda"] * 6  # decoded there; the PNG by PIL
    batch = pixels(cuda, on_gpu)
    assert batch.device.type == "cuda"
    for mode in ("device", "exact"):  # libjpeg in this process; PIL
        diff = (batch.cpu() - pixels(cpu, loaded(cpu, spec, root, names, mode))).abs()
        assert diff.mean() < CUDA_PIXELS_MEAN and diff.max() < CUDA_PIXELS_MAX, (mode, diff.mean(), diff.max())
