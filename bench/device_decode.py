"""decode_mode "device" against exact, ON THE CPU: the decoders send a JPEG's bytes and the model's process
decodes (torchvision's decode_jpeg: libjpeg here, nvjpeg on CUDA), resizes and crops them. The mode is
meant for CUDA; these figures are its CPU fallback and its pixels, not its GPU speed (no GPU was lent).

On 96 of bench/scoring_loader's photographs (1600x1200 JPEG, quality 90), with the stage's loader and
2 decoder processes, at 32 px (the tiny open_clip) and 224 px (a ViT-B-32 of random weights):
1. images/s from the loader to the float batch (pixels_from_uint8) in each mode, and the CPU-s per image
   the model's process spends (device mode decodes there);
2. device - exact: normalised pixels mean and max |d|, and CLIPScore (w = 2.5) of the stage, tiny and a
   ViT-B-32 of random weights.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

COUNT = 96
MODES = ("exact", "device")


def shard(spec, root: Path, mode: str, decoders: int = 2):
    from xmdata.tasks.scoring.score import ScoreShard
    from xmdata.tasks.stage_params import ScoringParams

    params = ScoringParams(clip_model=spec.name_or_path, decode_mode=mode, decoders=decoders)
    return ScoreShard(params=params, model=spec, image_root=str(root), references_column=None)


def loader_pass(model, spec, root: Path, paths: list[str], mode: str):
    """(images/s, CPU-s per image of this process, the float batch): the stage's loader, 32 a batch."""
    import torch

    from xmdata.models.loader_facts import LoaderFacts
    from xmdata.tasks.build.image_decode import ImageRef
    from xmdata.tasks.scoring.score import image_loader

    batches = []
    started, cpu = time.perf_counter(), time.process_time()
    facts = LoaderFacts(model.decode_recipe(), 32)
    with image_loader([ImageRef(path=p) for p in paths], shard(spec, root, mode), facts) as loader:
        for batch in loader:
            batches.append(model.pixels_from_uint8([d.pixels for d in batch]))
    seconds, cpu = time.perf_counter() - started, time.process_time() - cpu
    return len(paths) / seconds, cpu / len(paths), torch.cat(batches)


def stage_scores(model_dir: str, root: Path, table, mode: str):
    import numpy as np

    from xmdata.tasks.scoring.score import clip_score_stage
    from xmdata.tasks.stage_params import ScoringParams

    params = ScoringParams(clip_model=model_dir, decode_mode=mode, batch_size=32)
    stage = clip_score_stage(params, params.spec(), str(root))
    return np.array(stage.fn(table, stage.params)[0].column("clip_score").to_pylist())


def main() -> None:
    import numpy as np
    import pyarrow as pa
    import torch

    from bench.scoring_inputs import random_vit_b_32
    from bench.scoring_loader import make_photos
    from xmdata.models.registry import get_model
    from xmdata.models.tiny import cached_tiny_models
    from xmdata.tasks.stage_params import ScoringParams

    spec = cached_tiny_models()["open_clip"]
    with tempfile.TemporaryDirectory(prefix="xmdata-bench-device-") as tmp:
        root = Path(tmp) / "photos"
        root.mkdir()
        paths = make_photos(root, COUNT)
        vit_b_32 = random_vit_b_32(Path(tmp) / "vit-b-32")
        print(f"CPU ONLY: {COUNT} photographs 1600x1200 JPEG; {len(os.sched_getaffinity(0))} cores, torch at "
              f"{torch.get_num_threads()} threads; load {os.getloadavg()[0]:.2f}. decode_jpeg here is libjpeg in the "
              "model's process: the mode's GPU speed (nvjpeg) is not measured here.", flush=True)
        # The device decode is the registry's model for the shard's spec, as in the stage.
        specs = (("32 px (tiny)", spec), ("224 px (ViT-B-32)", ScoringParams(clip_model=vit_b_32).spec()))
        loader_pass(get_model("clip_scorer", spec), spec, root, paths[:8], "exact")  # the decoder processes started
        for name, model_spec in specs:
            model = get_model("clip_scorer", model_spec)
            results = {mode: loader_pass(model, model_spec, root, paths, mode) for mode in MODES}
            print(f"{name}, 2 decoder processes: " + "; ".join(
                f"{mode} {rate:.1f} images/s, {cpu * 1000:.1f} CPU-ms an image in the model's process"
                for mode, (rate, cpu, _) in results.items()), flush=True)
            diff = (results["device"][2] - results["exact"][2]).abs()
            print(f"{name}, device - exact: normalised pixels mean |d| {diff.mean():.5f}, max {diff.max():.4f}",
                  flush=True)
        table = pa.table({"id": [f"p{i}" for i in range(len(paths))], "image_path": paths,
                          "text": [f"a photograph, number {i}" for i in range(len(paths))]})
        for name, model_dir in (("tiny", spec.name_or_path), ("ViT-B-32 (random weights)", vit_b_32)):
            scores = {mode: stage_scores(model_dir, root, table, mode) for mode in MODES}
            diff = np.abs(scores["device"] - scores["exact"])
            print(f"{name}, device - exact: CLIPScore mean |d| {diff.mean():.6f}, max {diff.max():.6f} "
                  f"(scores {scores['exact'].mean():.3f} on average)", flush=True)


if __name__ == "__main__":
    main()
