"""Bad inputs, written as a careless user or an attacker would hand them over: builders of files
for tests/cli/test_adversarial.py. Each builder writes into a folder and returns nothing."""
from __future__ import annotations

import io
import json
import os
import shutil

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.data import sample_path

SAMPLE = os.path.dirname(sample_path("captions.jsonl"))
DEMO = os.path.join(os.path.dirname(SAMPLE), "releases", "demo.yaml")
MMMEB, MCLIPSCORE = (os.path.join(os.path.dirname(SAMPLE), "releases", f"{n}.yaml") for n in ("mmmeb", "mclipscore-eval"))


def text(name: str, content: str | bytes):
    def write(folder):
        data = content.encode("utf-8") if isinstance(content, str) else content
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return write


def jsonl(name: str, rows: list[dict]):
    return text(name, "".join(json.dumps(r) + "\n" for r in rows))


def parquet(name: str, columns: dict):
    def write(folder):
        pq.write_table(pa.table(columns), folder / name)
    return write


def folder(name: str):
    return lambda f: (f / name).mkdir(parents=True, exist_ok=True)


def demo_config(name: str, edit=lambda text: text, recipe: str = DEMO):
    """The packaged demo config (or another packaged recipe) with sample paths made absolute, then `edit`ed."""
    def write(f):
        (f / name).write_text(edit(open(recipe, encoding="utf-8").read().replace("../sample", SAMPLE)))
    return write


def config(name: str, body: str):
    """A release.yaml beside a copy of the sample captions and images."""
    def write(f):
        shutil.copy(sample_path("captions.jsonl"), f / "captions.jsonl")
        shutil.copy(sample_path("images.csv"), f / "images.csv")
        (f / name).write_text(body)
    return write


def embeddings(name: str, query, target, ids=None):
    """An MMMEB table: one task, one language, the given query and target vectors."""
    n = len(query)
    return parquet(name, {"id": ids or [f"q{i}" for i in range(n)], "task": ["VQA"] * n, "language": ["en"] * n,
                          "query_embedding": pa.array([list(map(float, v)) for v in query], pa.list_(pa.float32())),
                          "target_embedding": pa.array([list(map(float, v)) for v in target], pa.list_(pa.float32()))})


def ratings(name: str, ids, score, rating):
    return parquet(name, {"id": pa.array(ids, pa.string()), "clip_score": pa.array(score, pa.float64()),
                          "rating": pa.array(rating, pa.float64())})


def png_bomb(name: str):
    """A valid PNG header claiming 100,000 x 100,000 pixels (10 gigapixels), 67 bytes on disk."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    data = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 100_000, 100_000, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\0")) + chunk(b"IEND", b""))
    return text(name, data)


def jpeg_bomb(name: str):
    """A whole, valid JPEG (EOI marker and all) whose frame header claims 30,000 x 30,000 pixels."""
    from PIL import Image

    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), "orange").save(buffer, "JPEG")
    data = bytearray(buffer.getvalue())
    frame = data.index(b"\xff\xc0")  # SOF0: length (2 bytes), precision (1), height (2), width (2)
    data[frame + 5:frame + 9] = (30_000).to_bytes(2, "big") * 2
    return text(name, bytes(data))


def bad_images(root):
    """The kinds of bad or unusual input a photo collection holds, as files (tests/scoring: each decode mode
    gives them today's results); their names."""
    from PIL import Image

    photo = Image.linear_gradient("L").resize((300, 200)).convert("RGB")  # rotated, it differs
    photo.save(root / "plain.jpg")
    buffer = io.BytesIO()
    photo.save(buffer, "JPEG")
    (root / "truncated.jpg").write_bytes(buffer.getvalue()[: len(buffer.getvalue()) // 2])
    photo.convert("CMYK").save(root / "cmyk.jpg")
    Image.fromarray((np.arange(200 * 300, dtype=np.uint16).reshape(200, 300) * 7)).save(root / "sixteen.png")
    frames = [Image.new("RGB", (120, 80), colour) for colour in ("red", "blue", "green")]
    frames[0].save(root / "animated.gif", save_all=True, append_images=frames[1:])
    frames[0].save(root / "animated.webp", save_all=True, append_images=frames[1:])
    exif = Image.Exif()
    exif[0x0112] = 6  # rotated 90°: decoded as stored, as the stage did before
    photo.save(root / "rotated.jpg", exif=exif)
    png_bomb("bomb.png")(root)
    jpeg_bomb("bomb.jpg")(root)
    return ["plain.jpg", "truncated.jpg", "cmyk.jpg", "sixteen.png", "animated.gif", "animated.webp",
            "rotated.jpg", "bomb.png", "bomb.jpg"]


def random_bytes(name: str, size: int = 4096):
    return text(name, np.random.default_rng(0).integers(0, 256, size, dtype=np.uint8).tobytes())


def all_of(*builders):
    def write(f):
        for build in builders:
            build(f)
    return write
