"""The scoring loader on real photographs at 1600x1200 JPEG (Open Images originals come at that size),
with the tiny open_clip (32 px input, so the loader is the whole cost), in one run:

1. For 400 photographs (five repetitions) and 2,000 (three), interleaved (bare, exact, fast, bare, ...),
   the load average with each: a bare loop in one process (PIL open, convert, open_clip's own
   preprocess), in this process and as a user's script in a fresh one (slower: see
   bare_in_a_fresh_process); and `xmdata score --workers 1 --shards 1` (its own Prefect server,
   XMDATA_SERVICE=off) in each decode mode: the flow's own pairs/s as the command prints it (the cold
   model load included: torch's and open_clip's imports are 4-6 s), the stage's pairs/s (run.json:
   its model load and its work), and CPU-seconds of every process of the command (sampled, per pid,
   every 0.1 s). The model's loader facts are on record (models/loader_facts.py) from a first run that
   is not counted, as they are from a user's second run on: the decoders start while the model loads.
   Ratios are taken within a repetition.
2. Decode + preprocess at 224 px (ViT-B-32's transform) in decoder processes, 1 then 2 decoders, each
   mode: images/s, and images per CPU-second of the decoders (per core).
3. The stage function in this process: its bottleneck line.

The photographs: scikit-image's own (astronaut, coffee, chelsea, rocket, retina, hubble_deep_field,
immunohistochemistry, stereo_motorcycle), random 4:3 crops upscaled to 1600x1200, JPEG quality 90.
"""
from __future__ import annotations

import json
import logging
import os
import statistics
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
COUNTS = {400: 5, 2000: 3}  # photographs: repetitions
SIZE = (1600, 1200)


def make_photos(root: Path, count: int = max(COUNTS)) -> list[str]:
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


BARE_SCRIPT = """
import sys, time
from pathlib import Path
from PIL import Image
from xmdata.models.registry import get_model
from xmdata.models.tiny import cached_tiny_models
preprocess = get_model("clip_scorer", cached_tiny_models()["open_clip"]).preprocess
root, paths = Path(sys.argv[1]), sys.argv[2:]
started = time.perf_counter()
for p in paths:
    preprocess(Image.open(root / p).convert("RGB"))
print(len(paths) / (time.perf_counter() - started))
"""


def bare_in_a_fresh_process(root: Path, paths: list[str]) -> float:
    """The bare loop as a user's script runs it. Slower than the same loop in this process: glibc maps each
    photo's blocks afresh and page-faults them in (decoders.py: _keep_freed_memory), where this process,
    which has made the photographs, had its malloc thresholds raised by those large images."""
    out = subprocess.run([sys.executable, "-c", BARE_SCRIPT, str(root), *paths], capture_output=True, text=True,
                         check=True)
    return float(out.stdout.split()[-1])


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


def score_command(model_dir: str, pairs: Path, root: Path, out: Path, mode: str) -> dict:
    """One `xmdata score` run: the flow's pairs/s as printed, the stage's pairs/s (its model load and work),
    the model load, and the CPU-seconds of all its processes."""
    xmdata = str(Path(sys.executable).with_name("xmdata"))
    env = {**os.environ, "XMDATA_SERVICE": "off", "XMDATA_MEMO": "off"}  # each run decodes: no memo
    argv = [xmdata, "score", str(pairs), "--out", str(out), "--image-root", str(root), "--clip-model", model_dir,
            "--workers", "1", "--shards", "1", "--decode-mode", mode]
    with tempfile.TemporaryFile("w+") as log:
        process = subprocess.Popen(argv, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
        cpu = tree_cpu_seconds(process)
        process.wait()
        log.seek(0)
        text = log.read()
    found = re.search(r"(\d+) of \d+ pairs scored in [\d.]+ s, ([\d.]+) pairs/s", text)
    if process.returncode or not found:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{text[-3000:]}")
    timing = json.loads((out / "run.json").read_text())["clip_score"]
    return {"stage": int(found.group(1)) / timing["seconds"], "flow": float(found.group(2)),
            "model_load_s": timing["model_load_s"], "cpu": cpu}


def load_average() -> float:
    return os.getloadavg()[0]


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
        all_paths = make_photos(root)
        print(f"{len(all_paths)} photographs {SIZE[0]}x{SIZE[1]} JPEG; {len(os.sched_getaffinity(0))} cores; "
              f"load {os.getloadavg()[0]:.2f}", flush=True)
        for count, repeats in COUNTS.items():
            paths = all_paths[:count]
            pairs = Path(tmp) / f"pairs-{count}.parquet"
            pq.write_table(pa.table({"id": [f"p{i}" for i in range(count)], "image_path": paths,
                                     "text": [f"a photograph, number {i}" for i in range(count)]}), pairs)
            score_command(spec.name_or_path, pairs, root, Path(tmp) / f"out-{count}-first", "exact")  # not counted
            rows = []
            for repeat in range(repeats):  # interleaved, so that load drifting over the run favours no one
                load = load_average()
                row = {"bare": bare_images_per_second(model.preprocess, root, paths), "load": [load],
                       "bare_fresh": bare_in_a_fresh_process(root, paths)}
                for mode in ("exact", "fast"):
                    row["load"].append(load_average())
                    row[mode] = score_command(spec.name_or_path, pairs, root, Path(tmp) / f"out-{count}-{repeat}-{mode}",
                                              mode)
                rows.append(row)
                print(f"{count} photographs, repetition {repeat + 1} (load {', '.join(f'{x:.2f}' for x in row['load'])}): "
                      f"bare loop {row['bare']:.1f} images/s (a fresh process's: {row['bare_fresh']:.1f}); " + "; ".join(
                          f"{mode}: the command's {row[mode]['flow']:.1f} pairs/s = {row[mode]['flow'] / row['bare']:.2f}x "
                          f"({row[mode]['flow'] / row['bare_fresh']:.2f}x the fresh loop), the stage's "
                          f"{row[mode]['stage']:.1f} (model load {row[mode]['model_load_s']:.1f} s), "
                          f"{row[mode]['cpu']:.1f} CPU-s" for mode in ("exact", "fast")), flush=True)
            for mode in ("exact", "fast"):
                here = [r[mode]["flow"] / r["bare"] for r in rows]
                fresh = [r[mode]["flow"] / r["bare_fresh"] for r in rows]
                print(f"{count} photographs: xmdata score --workers 1 --decode-mode {mode}, the pairs/s it prints / the "
                      f"bare loop, median of {repeats}: {statistics.median(here):.2f}x this process's loop "
                      f"({min(here):.2f}-{max(here):.2f}), {statistics.median(fresh):.2f}x a fresh process's "
                      f"({min(fresh):.2f}-{max(fresh):.2f})", flush=True)
        paths = all_paths[:min(COUNTS)]
        pairs = Path(tmp) / f"pairs-{min(COUNTS)}.parquet"

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
