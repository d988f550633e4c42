"""The scoring loader's decoder processes: exact mode is open_clip's own preprocess bit for bit on real
photographs, fast mode differs a little and is hashed, bad images get today's reasons in both modes,
a decoder that dies costs a retry then a registered reject, a daemonic worker decodes in threads, and
decoders die with their worker. Tiny open_clip, CPU."""
import logging
import multiprocessing
import os
import signal
import time
from functools import partial

import numpy as np
import pyarrow as pa
import pytest
from PIL import Image

from support.bad_inputs import bad_images
from xmdata.models.registry import get_model
from xmdata.tasks.build import decoders as decoders_module
from xmdata.tasks.build.batch_loader import PrefetchingLoader
from xmdata.tasks.build.decoders import ProcessDecoders, worker_decoders
from xmdata.tasks.build.image_decode import Decoded, ImageRef, decode_image
from xmdata.tasks.scoring.score import clip_score_stage, decoder_died
from xmdata.tasks.stage_params import ScoringParams

# skimage's own photographs (astronaut, coffee, chelsea, rocket, retina, a stereo pair's left view)
PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "retina", "stereo_motorcycle", "camera")


@pytest.fixture(scope="module")
def photos(tmp_path_factory):
    import skimage.data as skimage_data

    root = tmp_path_factory.mktemp("photos")
    paths = []
    for name in PHOTOS:
        array = getattr(skimage_data, name)()
        image = Image.fromarray(array[0] if isinstance(array, tuple) else array)
        for size, fmt in (((1600, 1200), "JPEG"), ((333, 517), "JPEG"), ((61, 45), "PNG")):
            path = f"{name}-{size[0]}.{fmt.lower()}"
            image.resize(size, Image.Resampling.LANCZOS).save(root / path, fmt)
            paths.append(path)
    return root, paths


@pytest.fixture(scope="module")
def scorer(tiny_models):
    return get_model("clip_scorer", tiny_models["open_clip"])


def stage_fn(spec, root, paths, **options):
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"), batch_size=8,
                           embeddings="float32", **options)
    stage = clip_score_stage(params, spec, str(root))
    table = pa.table({"id": [f"r{i}" for i in range(len(paths))], "image_path": paths,
                      "text": [f"a photograph, number {i}" for i in range(len(paths))]})
    return stage, *stage.fn(table, stage.params)


def decoded_in_processes(scorer, root, paths, draft=None):
    load = partial(decode_image, root=str(root), max_pixels=10**8, preprocess=scorer.decode_recipe(), draft=draft)
    with PrefetchingLoader([ImageRef(path=p) for p in paths], 4, load, worker_decoders(2), died=decoder_died) as loader:
        return [d for batch in loader for d in batch]


def test_exact_mode_is_open_clips_preprocess_bit_for_bit_on_real_photographs(scorer, photos):
    import torch

    root, paths = photos
    decoded = decoded_in_processes(scorer, root, paths)
    assert all(isinstance(d.pixels, np.ndarray) and d.pixels.dtype == np.uint8 for d in decoded)
    ours = scorer.pixels_from_uint8([d.pixels for d in decoded])
    theirs = torch.stack([scorer.preprocess(Image.open(root / p).convert("RGB")) for p in paths])
    assert ours.dtype == theirs.dtype and torch.equal(ours, theirs)


def uint8_ramp():
    """Every uint8 value once in each channel: a 16 x 16 HWC image."""
    return np.repeat(np.arange(256, dtype=np.uint8).reshape(16, 16, 1), 3, axis=2)


def test_the_division_by_255_is_the_cpus_true_division_for_every_uint8_value(scorer):
    """pixels_from_uint8 is numpy's float32 arithmetic on all 256 values: x / 255 (ToTensor's), then
    Normalize's (x - mean) / std. x · (1/255), what CUDA computes for a division by a CPU scalar
    (BinaryDivTrueKernel.cu), is another float32 for 126 of them."""
    import torch
    from torchvision.transforms import Normalize

    normalize = next(t for t in scorer.preprocess.transforms if isinstance(t, Normalize))
    x = np.arange(256, dtype=np.float32)
    divided, by_reciprocal = x / np.float32(255), x * (np.float32(1) / np.float32(255))
    assert int((divided != by_reciprocal).sum()) == 126
    expected = np.stack([(divided - np.float32(m)) / np.float32(s) for m, s in zip(normalize.mean, normalize.std)])
    ours = scorer.pixels_from_uint8([uint8_ramp()])
    assert ours.dtype == scorer.dtype == torch.float32 and ours.shape == (1, 3, 16, 16)
    assert np.array_equal(ours[0].reshape(3, 256).numpy(), expected)


def test_pixels_from_uint8_divides_only_by_tensors_on_the_models_device(scorer):
    """The ÷255 and ÷std take a tensor where the pixels lie, never a Python number: on CUDA a number
    (a CPU scalar) is multiplied by its reciprocal instead, one bit off for half the values."""
    import torch
    from torch.overrides import TorchFunctionMode

    class Arithmetic(TorchFunctionMode):
        def __init__(self):
            super().__init__()
            self.calls = []

        def __torch_function__(self, func, types, args=(), kwargs=None):
            name = getattr(func, "__name__", "")
            if name in ("div", "div_", "__truediv__", "true_divide", "mul", "mul_", "__mul__", "multiply"):
                self.calls.append((name, args[1]))
            return func(*args, **(kwargs or {}))

    with Arithmetic() as seen:
        scorer.pixels_from_uint8([uint8_ramp()])
    assert [name for name, _ in seen.calls] == ["div", "div"]  # ÷255, ÷std
    assert all(isinstance(d, torch.Tensor) and d.device.type == torch.device(scorer.device).type
               and d.dtype == torch.float32 for _, d in seen.calls), seen.calls


def test_fast_mode_drafts_jpegs_at_the_transforms_size_and_stays_close(scorer, photos, tiny_models):
    import torch

    root, paths = photos
    keep = scorer.decode_recipe().keep
    side = scorer.preprocess_stages()[0](Image.new("RGB", (300, 200))).size
    assert keep == max(side)  # read from the transform (the tiny model keeps 32 px), not assumed 224
    with Image.open(root / paths[0]) as image:
        image.draft("RGB", (keep, keep))
        assert min(image.size) >= keep and image.size[0] < 1600  # a DCT scale, not the whole photograph
    fast = scorer.pixels_from_uint8([d.pixels for d in decoded_in_processes(scorer, root, paths, draft=keep)])
    exact = scorer.pixels_from_uint8([d.pixels for d in decoded_in_processes(scorer, root, paths)])
    jpeg = torch.tensor([p.endswith(".jpeg") for p in paths])
    assert torch.equal(fast[~jpeg], exact[~jpeg])  # a PNG decodes whole in either mode
    diff = (fast[jpeg] - exact[jpeg]).abs()
    assert 0 < diff.mean() < 0.1 and diff.max() < 2.0, (diff.mean(), diff.max())  # normalised units
    # The mode is in the params hash (exact has the hash shards had before the modes), and in the scores.
    spec = tiny_models["open_clip"]
    exact_stage, exact_kept, _ = stage_fn(spec, root, paths)
    fast_stage, fast_kept, _ = stage_fn(spec, root, paths, decode_mode="fast")
    assert exact_stage.params_hash != fast_stage.params_hash
    scores = [np.array(k.column("clip_score").to_pylist()) for k in (exact_kept, fast_kept)]
    assert np.abs(scores[0] - scores[1]).max() < 0.05


@pytest.mark.parametrize("mode", ["exact", "fast"])
def test_bad_images_decode_as_before_or_get_todays_reasons_in_either_mode(scorer, tmp_path, mode):
    import torch

    names = bad_images(tmp_path)
    keep = scorer.decode_recipe().keep
    decoded = decoded_in_processes(scorer, tmp_path, names, draft=keep if mode == "fast" else None)
    # as the stage decoded before the decoders: every image converted to RGB (a copy when it is RGB already)
    before = [decode_image(ImageRef(path=n), str(tmp_path), 10**8, lambda image: scorer.preprocess(image.convert("RGB")))
              for n in names]
    reasons = {n: d.reason for n, d in zip(names, decoded)}
    assert reasons == {n: d.reason for n, d in zip(names, before)}
    assert reasons == {**dict.fromkeys(names), "truncated.jpg": "corrupt_image", "bomb.png": "image_too_large",
                       "bomb.jpg": "image_too_large"}
    for name, ours, old in zip(names, decoded, before):
        if old.pixels is not None and (mode == "exact" or not name.endswith(".jpg")):
            assert torch.equal(scorer.pixels_from_uint8([ours.pixels])[0], old.pixels), name


def kill_on(marker_dir: str, name: str, always: bool, item: ImageRef):
    """A load that kills its decoder process on `name` (once, or every time)."""
    marker = os.path.join(marker_dir, "killed-once")
    if item.path == name and (always or not os.path.exists(marker)):
        open(marker, "w").close()
        os.kill(os.getpid(), signal.SIGKILL)
    return Decoded(pixels=item.path)


@pytest.mark.parametrize("always", [False, True])
def test_a_decoder_that_dies_costs_one_retry_alone_then_a_registered_reject(tmp_path, always):
    from xmdata.schemas.reasons import REASONS

    items = [ImageRef(path=f"{i}.jpg") for i in range(12)]
    decoders = ProcessDecoders(2)
    try:
        load = partial(kill_on, str(tmp_path), "5.jpg", always)
        with PrefetchingLoader(items, 4, load, decoders, died=decoder_died) as loader:
            got = [d for batch in loader for d in batch]
        assert len(got) == 12  # no row lost, no hang
        if always:
            assert got[5].reason == "decoder_died" and "decoder_died" in REASONS
            assert [d.pixels for i, d in enumerate(got) if i != 5] == [f"{i}.jpg" for i in range(12) if i != 5]
        else:
            assert [d.pixels for d in got] == [f"{i}.jpg" for i in range(12)]
        # the pool serves the next shard after the deaths
        with PrefetchingLoader(items[:3], 2, partial(kill_on, str(tmp_path), "none", False), decoders) as loader:
            assert [d.pixels for batch in loader for d in batch] == ["0.jpg", "1.jpg", "2.jpg"]
    finally:
        decoders.shutdown()


def test_a_workers_decoders_are_started_once_and_kept_for_its_next_shards():
    first = worker_decoders(2)
    pids = {f.result() for f in [first.submit(call_pid, None) for _ in range(16)]}
    again = worker_decoders(2)
    assert first.kind == "processes" and again is first and os.getpid() not in pids
    assert {f.result() for f in [again.submit(call_pid, None) for _ in range(16)]} <= pids
    # A GPU worker's default moves with the cluster's load: a larger pool is kept for it, not restarted.
    assert worker_decoders(1, keep_more=True) is first
    assert worker_decoders(1) is not first  # another count asked for: a new pool, the old one stopped
    assert worker_decoders(2, keep_more=True) is not first  # more than the pool has: a larger one
    decoders_module.shutdown_decoders()


def faults_decoding_again(path: str, recipe) -> int:
    """Minor page faults of this process while it decodes `path` once more (after twice)."""
    import resource

    for _ in range(2):
        decode_image(ImageRef(path=os.path.basename(path)), os.path.dirname(path), 10**8, recipe)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    decode_image(ImageRef(path=os.path.basename(path)), os.path.dirname(path), 10**8, recipe)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before


def test_a_decoder_reuses_the_memory_of_its_last_image(scorer, tmp_path):
    """glibc's default maps each block of a large image afresh and returns it when freed: ~3,700 page
    faults a 1600x1200 photo, a third of a decoder's CPU time. A decoder keeps it for the next image."""
    if not hasattr(__import__("ctypes").CDLL(None), "mallopt"):
        pytest.skip("not glibc: the decoders keep the libc's own policy")
    path = tmp_path / "photo.png"  # RGBA: converted to RGB, a second full-size image
    Image.radial_gradient("L").resize((1600, 1200)).convert("RGBA").save(path, compress_level=1)
    decoders = ProcessDecoders(1)
    try:
        faults = decoders.submit(partial(faults_decoding_again, str(path)), scorer.decode_recipe()).result()
    finally:
        decoders.shutdown()
    assert faults < 500, faults  # 1600x1200x4 bytes alone would be 1,875 pages


def report_kind(queue):
    lines = []
    handler = logging.Handler()
    handler.emit = lambda record: lines.append(record.getMessage())
    logging.getLogger(decoders_module.__name__).addHandler(handler)
    queue.put([worker_decoders(2).kind, worker_decoders(2).kind, lines])


def test_a_daemonic_worker_decodes_in_threads_and_says_so_once():
    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    child = context.Process(target=report_kind, args=(queue,), daemon=True)
    child.start()
    first, second, lines = queue.get(timeout=60)
    assert first == second == "threads" and len(lines) == 1 and "daemonic" in lines[0]
    child.join(10)


def start_decoders_and_wait(queue):
    decoders = worker_decoders(2)
    queue.put(sorted(f.result() for f in [decoders.submit(call_pid, None) for _ in range(8)]))
    time.sleep(600)


def call_pid(_):
    return os.getpid()


def test_decoders_exit_when_their_worker_is_killed():
    import psutil

    context = multiprocessing.get_context("spawn")
    queue = context.Queue()
    worker = context.Process(target=start_decoders_and_wait, args=(queue,))
    worker.start()
    try:
        queue.get(timeout=60)
        children = psutil.Process(worker.pid).children()
        assert len(children) >= 2
    finally:
        os.kill(worker.pid, signal.SIGKILL)
        worker.join(10)
    gone, alive = psutil.wait_procs(children, timeout=10)
    assert not alive, alive


@pytest.mark.gpu
def test_on_cuda_the_batch_travels_as_uint8_and_is_normalised_to_the_cpus_bits(tiny_models, photos, tmp_path):
    import torch

    spec = tiny_models["open_clip"]
    params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"), device="cuda",
                           autocast="none")
    cuda = get_model("clip_scorer", params.spec())
    root, paths = photos
    arrays = [d.pixels for d in decoded_in_processes(cuda, root, paths)]
    on_device = cuda.pixels_from_uint8(arrays)
    assert on_device.device.type == "cuda"
    cpu = get_model("clip_scorer", spec)
    assert torch.equal(on_device.cpu(), cpu.pixels_from_uint8(arrays))
    assert torch.equal(cuda.pixels_from_uint8([uint8_ramp()]).cpu(), cpu.pixels_from_uint8([uint8_ramp()]))  # all 256
    # A decoder killed mid-shard on a GPU worker: its images retried alone, the killer refused, no row lost.
    with PrefetchingLoader([ImageRef(path=f"{i}.jpg") for i in range(8)], 4,
                           partial(kill_on, str(tmp_path), "3.jpg", True), ProcessDecoders(2), died=decoder_died) as loader:
        got = [d for batch in loader for d in batch]
    assert [d.reason for d in got] == [None, None, None, "decoder_died", None, None, None, None]


def test_each_shard_names_its_bottleneck(tiny_models, photos, caplog):
    import re

    root, paths = photos
    with caplog.at_level(logging.INFO, logger="xmdata.tasks.scoring.score"):
        stage_fn(tiny_models["open_clip"], root, paths, decoders=2)
    lines = [r.getMessage() for r in caplog.records if r.name == "xmdata.tasks.scoring.score"]
    assert any(re.fullmatch(r"clip_score: loader \d+ images/s \(2 decoder (processes|threads)\), model \d+/s: "
                            r"(loader|model)-bound", line) for line in lines), lines
