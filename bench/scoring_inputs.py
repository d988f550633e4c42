"""What the scoring bench runs on: distinct JPEGs, pairs tables, and a random-weight ViT-B-32."""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image


def make_images(folder: Path, n: int, size: int = 256) -> list[str]:
    """Distinct smooth-noise photos as JPEG: real decoding work, and no two pairs share an image."""
    rng = np.random.default_rng(0)
    folder.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        small = Image.fromarray(rng.integers(0, 256, (8, 8, 3), dtype=np.uint8))
        small.resize((size, size), Image.BICUBIC).save(folder / f"{i:05d}.jpg", quality=90)
    return [f"{folder.name}/{i:05d}.jpg" for i in range(n)]


def random_vit_b_32(folder: Path) -> str:
    """ViT-B-32 with seeded random weights as a local model dir, so every worker loads the same ones."""
    import json

    import open_clip
    import torch
    from safetensors.torch import save_file

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "bench-ViT-B-32.json").write_text(json.dumps(open_clip.get_model_config("ViT-B-32")))
    torch.manual_seed(0)
    save_file(open_clip.create_model("ViT-B-32", pretrained=None).state_dict(),
              str(folder / "open_clip_model.safetensors"))
    return str(folder)


def write_pairs(path: Path, image_paths: list[str]) -> str:
    texts = [f"photo {i}: a red bicycle by a blue house in the evening light" for i in range(len(image_paths))]
    pq.write_table(pa.table({"id": [f"p{i:05d}" for i in range(len(texts))], "image_path": image_paths,
                             "text": texts}), path)
    return str(path)
