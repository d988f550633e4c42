"""The scoring loader on real photographs at 1600x1200 JPEG (Open Images originals come at that size),
with the tiny open_clip (32 px input, so the loader is the whole cost), in one run:

1. `xmdata score --workers 1` (its own Prefect server and one-worker cluster, XMDATA_SERVICE=off) in
   each decode mode: its pairs/s (the flow's own figure, server and cluster start not counted), ÷ a
   bare loop in one process (PIL open, convert, open_clip's own preprocess), measured before and
   after (mean). CPU-seconds of every process of the command (sampled, per pid, every 0.1 s).
2. Decode + preprocess at 224 px (ViT-B-32's transform) in decoder processes, 1 then 2 decoders, each
   mode: images/s, and images per CPU-second of the decoders (per core).
3. The stage function in this process: its bottleneck line.

The photographs: scikit-image's own (astronaut, coffee, chelsea, rocket, retina, hubble_deep_field,
immunohistochemistry, stereo_motorcycle), random 4:3 crops upscaled to 1600x1200, JPEG quality 90.
"""
from __future__ import annotations

import logging
import os
import random
import re
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

import psutil
from PIL import Image

PHOTOS = ("astronaut", "coffee", "chelsea", "rocket", "retina", "hubble_deep_field", "immunohistochemistry",
          "stereo_motorcycle")
COUNT = 400
SIZE = (1600, 1200)


def make_photos(root: Path, count: int = COUNT) -> list[str]:
    import skimage.data

    rng = random.Random(0)
    sources = []
    for name in PHOTOS:
        array = getattr(skimage.data, name)()
        sources.append(Image.fromarray(array[0] if isinstance(array, tuple) else array).convert("RGB"))
    paths = []
    for i in range(count):
        photo = sources[i % len(sources)]
        w, h = photo.size
        cw = int(min(w, h * 4 / 3) * rng.uniform(0.7, 1.0))
        ch = int(cw * 3 / 4)
        left, top = rng.randrange(w - cw + 1), rng.randrange(h - ch + 1)
        path = f"photo-{i:04d}.jpg"
        photo.crop((left, top, left + cw, top + ch)).resize(SIZE, Image.Resampling.BICUBIC).save(root / path, quality=90)
        paths.append(path)
    return paths


def bare_images_per_second(preprocess, root: Path, paths: list[str]) -> float:
    started = time.perf_counter()
    for p in paths:
        preprocess(Image.open(root / p).convert("RGB"))
    return len(paths) / (time.perf_counter() - started)


def tree_cpu_seconds(process: subprocess.Popen, poll: float = 0.1) -> float:
    """CPU-seconds of a command and every process under it, read per pid until it exits."""
    seen: dict[int, float] = {}
    root = psutil.Process(process.pid)
    while process.poll() is None:
        try:
            procs = [root, *root.children(recursive=True)]
        except psutil.NoSuchProcess:
            break
        for proc in procs:
            try:
                t = proc.cpu_times()
                seen[proc.pid] = max(seen.get(proc.pid, 0.0), t.user + t.system)
            except psutil.Error:
                pass
        time.sleep(poll)
    return sum(seen.values())


def score_command(model_dir: str, pairs: Path, root: Path, out: Path, mode: str) -> tuple[float, float]:
    """(pairs/s as `xmdata score` prints it, CPU-seconds of all its processes)."""
    xmdata = str(Path(sys.executable).with_name("xmdata"))
    env = {**os.environ, "XMDATA_SERVICE": "off"}
    argv = [xmdata, "score", str(pairs), "--out", str(out), "--image-root", str(root), "--clip-model", model_dir,
            "--workers", "1", "--shards", "1", "--decode-mode", mode]
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        cpu = tree_cpu_seconds(process)
        process.wait()
        log.seek(0)
        text = log.read()
    found = re.search(r"([\d.]+) pairs/s", text)
    if process.returncode or not found:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{text[-3000:]}")
    return float(found.group(1)), cpu


def decoders_per_core(root: Path, paths: list[str], recipe, keep: int | None, count: int) -> tuple[float, float]:
    """(images/s, images per CPU-second of the decoders) for `count` decoder processes."""
    from xmdata.tasks.build.batch_loader import PrefetchingLoader
    from xmdata.tasks.build.decoders import ProcessDecoders
    from xmdata.tasks.build.image_decode import ImageRef, decode_image

    decoders = ProcessDecoders(count)
    try:
        for future in [decoders.submit(time.sleep, 0.5) for _ in range(count)]:  # every decoder started
            future.result()
        children = psutil.Process().children()
        before = sum(c.cpu_times().user + c.cpu_times().system for c in children)
        load = partial(decode_image, root=str(root), max_pixels=10**8, preprocess=recipe, draft=keep)
        started = time.perf_counter()
        with PrefetchingLoader([ImageRef(path=p) for p in paths], 32, load, decoders) as loader:
            decoded = [d for batch in loader for d in batch]
        seconds = time.perf_counter() - started
        cpu = sum(c.cpu_times().user + c.cpu_times().system for c in children) - before
        assert all(d.pixels is not None for d in decoded)
        return len(paths) / seconds, len(paths) / cpu
    finally:
        decoders.shutdown()


def mode_difference(name: str, model_dir: str, table, root: Path) -> None:
    import numpy as np

    from xmdata.models.registry import get_model
    from xmdata.tasks.build.image_decode import ImageRef, decode_image
    from xmdata.tasks.scoring.score import clip_score_stage
    from xmdata.tasks.stage_params import ScoringParams

    scores, pixels = {}, {}
    for mode in ("exact", "fast"):
        params = ScoringParams(clip_model=model_dir, decode_mode=mode, batch_size=32)
        model = get_model("clip_scorer", params.spec())
        recipe = model.decode_recipe()
        arrays = [decode_image(ImageRef(path=p), str(root), 10**8, recipe,
                               recipe.keep if mode == "fast" else None).pixels
                  for p in table.column("image_path").to_pylist()]
        pixels[mode] = model.pixels_from_uint8(arrays).float().numpy()
        stage = clip_score_stage(params, params.spec(), str(root))
        scores[mode] = np.array(stage.fn(table, stage.params)[0].column("clip_score").to_pylist())
    pixel_diff, score_diff = np.abs(pixels["fast"] - pixels["exact"]), np.abs(scores["fast"] - scores["exact"])
    print(f"{name}, {pixels['exact'].shape[-1]} px, {len(table)} photographs, fast - exact: normalised pixels "
          f"mean |d| {pixel_diff.mean():.4f}, max {pixel_diff.max():.3f}; CLIPScore mean |d| {score_diff.mean():.5f}, "
          f"max {score_diff.max():.5f} (scores {scores['exact'].mean():.3f} on average)", flush=True)


def main() -> None:
    import open_clip
    import pyarrow as pa
    import pyarrow.parquet as pq

    from xmdata.models.registry import get_model
    from xmdata.models.tiny import cached_tiny_models

    spec = cached_tiny_models()["open_clip"]
    model = get_model("clip_scorer", spec)
    with tempfile.TemporaryDirectory(prefix="xmdata-bench-loader-") as tmp:
        root = Path(tmp) / "photos"
        root.mkdir()
        paths = make_photos(root)
        pairs = Path(tmp) / "pairs.parquet"
        pq.write_table(pa.table({"id": [f"p{i}" for i in range(len(paths))], "image_path": paths,
                                 "text": [f"a photograph, number {i}" for i in range(len(paths))]}), pairs)
        print(f"{len(paths)} photographs {SIZE[0]}x{SIZE[1]} JPEG; {len(os.sched_getaffinity(0))} cores; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
        bare_before = bare_images_per_second(model.preprocess, root, paths)
        # exact first and last, so that load drifting over the run does not favour one mode
        runs = [(mode, *score_command(spec.name_or_path, pairs, root, Path(tmp) / f"out-{i}", mode))
                for i, mode in enumerate(("exact", "fast", "exact"))]
        bare_after = bare_images_per_second(model.preprocess, root, paths)
        bare = (bare_before + bare_after) / 2
        print(f"bare loop (PIL open, convert, open_clip's preprocess), one process: {bare_before:.1f} / "
              f"{bare_after:.1f} images/s")
        for mode, rate, cpu in runs:
            print(f"xmdata score --workers 1 --decode-mode {mode}: {rate:.1f} pairs/s = {rate / bare:.2f}x the bare "
                  f"loop; {cpu:.1f} CPU-s over all its processes")

        # Decode + preprocess at 224 px, ViT-B-32's transform, in decoder processes.
        from xmdata.tasks.build.image_decode import ImageRef, decode_image

        from xmdata.models.open_clip_scorer import OpenClipScorer

        transform = open_clip.image_transform(224, is_train=False)
        vit_b_32 = OpenClipScorer(spec)  # not loaded: only its transform, read as the stage reads a model's
        vit_b_32.preprocess = transform
        recipe = vit_b_32.decode_recipe()
        started = time.process_time()
        for p in paths[:100]:
            decode_image(ImageRef(path=p), str(root), 10**8, transform)
        one_thread = 100 / (time.process_time() - started)
        print(f"224 px, open_clip's preprocess in this process: {one_thread:.1f} images per CPU-s")
        for mode, keep in (("exact", None), ("fast", recipe.keep)):
            for count in (1, 2):
                rate, per_cpu = decoders_per_core(root, paths, recipe, keep, count)
                print(f"224 px {mode}, {count} decoder(s): {rate:.1f} images/s, {per_cpu:.1f} images per CPU-s")

        # exact against fast: normalised pixels, and CLIPScore of the stage (tiny; ViT-B-32, random weights).
        from bench.scoring_inputs import random_vit_b_32

        sample = pq.read_table(pairs).slice(0, 96)
        for name, model_dir in (("tiny", spec.name_or_path), ("ViT-B-32 (random weights)",
                                                               random_vit_b_32(Path(tmp) / "vit-b-32"))):
            mode_difference(name, model_dir, sample, root)

        # The stage's bottleneck line, the stage function in this process.
        from xmdata.models.tiny import cached_tiny_models as tiny
        from xmdata.tasks.scoring.score import clip_score_stage
        from xmdata.tasks.stage_params import ScoringParams

        logging.basicConfig(level=logging.WARNING, format="%(message)s")
        logging.getLogger("xmdata.tasks.scoring.score").setLevel(logging.INFO)
        spec = tiny()["open_clip"]
        params = ScoringParams(clip_model=spec.name_or_path, pretrained=spec.option("pretrained"))
        stage = clip_score_stage(params, spec, str(root))
        stage.fn(pq.read_table(pairs), stage.params)


if __name__ == "__main__":
    main()
