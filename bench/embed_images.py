"""Images inside a release, and publishing it. Three tables refer to N photographs (captions by image_id,
the images table, clip_scores by image_path), as the demo's do. Both runs write the tables, the explore
page and the manifest; the embedded run writes the images into the tables first. Printed: the CPU-s of
the release's publishing step with embed_images divided by without, the bytes of the embedded release
divided by (the images' bytes + the plain release's), and the rows per row group. N is the demo's 235
images, then 2,000 synthetic photographs (320x240 JPEGs, quality 90). Then one publish of a release to
the local Hub stand-in, a second publish (no commit), and a publish killed after two of its large files
were stored and then run again (the bytes sent again).

    .venv/bin/python -m bench embed_images
"""
from __future__ import annotations

import glob
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
from PIL import Image


def photographs(folder: str, n: int) -> list[str]:
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    names = []
    y, x = np.mgrid[0:240, 0:320]
    for i in range(n):
        base = (np.sin(x / (7 + i % 13)) + np.cos(y / (5 + i % 11))) * 60 + 128
        noise = rng.normal(0, 18, (240, 320, 3))
        pixels = np.clip(base[..., None] + noise + rng.integers(-40, 40, 3), 0, 255).astype(np.uint8)
        Image.fromarray(pixels).save(os.path.join(folder, f"photo-{i:05d}.jpg"), quality=90)
        names.append(f"images/photo-{i:05d}.jpg")  # relative to the folder above FOLDER
    return names


def release_tables(root: str, ids: list[str], paths: list[str]) -> None:
    n = len(ids)
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    tables = {"captions": {"id": [f"cap-{i}" for i in range(n)], "text": ["A photograph."] * n, "image_id": ids},
              "images": {"language": ["en"] * n, "image_id": ids, "latitude": [0.0] * n, "longitude": [0.0] * n},
              "clip_scores": {"id": [f"cap-{i}" for i in range(n)], "image_path": paths, "image_id": ids,
                              "clip_score": [0.5] * n}}
    from xmdata.runtime.atomic import write_parquet_atomic

    for name, columns in tables.items():
        write_parquet_atomic(pa.table(columns), os.path.join(root, "data", f"{name}.parquet"))


def publish_step(root: str, ids, paths, folder: str, embed: bool) -> float:
    from xmdata.tasks.release.embed_images import ImageSources, embed_release_images
    from xmdata.tasks.release.explore import write_explore
    from xmdata.tasks.release.manifest import write_manifest

    start = time.process_time()
    release_tables(root, ids, paths)
    if embed:
        sources = ImageSources(by_id={i: (p, os.path.join(folder, p)) for i, p in zip(ids, paths)},
                               roots={"clip_scores": folder})
        embed_release_images(root, ["captions", "images", "clip_scores"], sources, None)
    write_explore(root, "bench")
    write_manifest(root, {"name": "bench", "version": "0"})
    return time.process_time() - start


def size(root: str) -> int:
    return sum(os.path.getsize(p) for p in glob.glob(os.path.join(root, "**"), recursive=True) if os.path.isfile(p))


def figures(n_label: str, folder: str, ids: list[str], paths: list[str], scratch: str) -> None:
    images = sum(os.path.getsize(os.path.join(folder, p)) for p in set(paths))
    plain, embedded = os.path.join(scratch, "plain"), os.path.join(scratch, "embedded")
    cpu = {False: [], True: []}
    for _ in range(3):
        for embed in (False, True):
            shutil.rmtree(embedded if embed else plain, ignore_errors=True)
            cpu[embed].append(publish_step(embedded if embed else plain, ids, paths, folder, embed))
    ratio = np.median(cpu[True]) / np.median(cpu[False])
    groups = [pq.ParquetFile(f).metadata for f in glob.glob(os.path.join(embedded, "data", "*.parquet"))]
    rows = sorted({round(m.num_rows / m.num_row_groups) for m in groups})
    print(f"{n_label}: publishing step CPU-s with embed_images / without: {ratio:.2f}x "
          f"({np.median(cpu[True]):.2f} / {np.median(cpu[False]):.2f} CPU-s, median of 3)")
    print(f"{n_label}: embedded release bytes / (images' bytes + plain release's): "
          f"{size(embedded) / (images + size(plain)):.2f} ({size(embedded):,} / ({images:,} + {size(plain):,}))")
    print(f"{n_label}: rows per row group: {rows}")


def publish_figures(scratch: str) -> None:
    import signal
    import subprocess

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from support.hub_standin import HubStandIn

    from xmdata.tasks.release.manifest import write_manifest

    release = os.path.join(scratch, "publish")
    os.makedirs(os.path.join(release, "data"))
    for i in range(4):
        with open(os.path.join(release, "data", f"part{i}.parquet"), "wb") as f:
            f.write(os.urandom(2_000_000))
    write_manifest(release, {"name": "bench", "version": "0"})
    hub = HubStandIn("bench-token")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HF_")} | {
        "HF_ENDPOINT": hub.url, "HF_TOKEN": "bench-token", "HF_HOME": os.path.join(scratch, "hf"),
        "HF_HUB_DISABLE_XET": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"}
    xmdata = [os.path.join(os.path.dirname(sys.executable), "xmdata"), "publish", release, "bench/set"]
    try:
        hub.hang_put_after = 2
        killed = subprocess.Popen(xmdata, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        hub.hanging.wait(120)
        for _ in range(200):  # the two uploads that passed finish arriving
            if len(hub.lfs) >= 2:
                break
            time.sleep(0.05)
        killed.send_signal(signal.SIGKILL)
        killed.wait()
        before = len(hub.calls("PUT", "^/lfs-upload/"))
        stored = set(hub.lfs)
        hub.hang_put_after = None
        subprocess.run(xmdata, env=env, check=True, capture_output=True)
        after = hub.calls("PUT", "^/lfs-upload/")[before:]
        again = [r for r in after if r.path.split("?")[0].rsplit("/", 1)[-1] in stored]
        first_total = sum(os.path.getsize(os.path.join(release, "data", f"part{i}.parquet")) for i in range(4))
        print(f"killed after 2 of 4 large files stored, then resumed: {sum(len(r.body) for r in again):,} bytes of "
              f"stored files sent again; {sum(len(r.body) for r in after):,} bytes sent by the rerun "
              f"(of {first_total:,}: the files not yet stored, each whole)")
        commits = len(hub.calls("POST", "/commit/"))
        puts = len(hub.calls("PUT", ""))
        second = subprocess.run(xmdata, env=env, check=True, capture_output=True, text=True)
        print(f"second publish: {len(hub.calls('POST', '/commit/')) - commits} commit(s), "
              f"{len(hub.calls('PUT', '')) - puts} upload(s): {second.stdout.strip()[-90:]}")
    finally:
        hub.stop()


def main() -> None:
    from xmdata.data import sample_path
    from xmdata.schemas import IMAGES
    from xmdata.schemas.readers import read_input

    with tempfile.TemporaryDirectory(prefix="xmdata-bench-embed-") as scratch:
        demo = read_input(sample_path("images.csv"), IMAGES)
        demo = demo.filter(demo["path"].is_valid())  # the sample's rows without a file name none
        figures(f"demo ({demo.num_rows} sample images)", os.path.dirname(sample_path("images.csv")),
                demo["id"].to_pylist(), demo["path"].to_pylist(), os.path.join(scratch, "demo"))
        folder = os.path.join(scratch, "photos")
        paths = photographs(os.path.join(folder, "images"), 2_000)
        figures("2,000 photographs", folder, [f"p{i}" for i in range(2_000)], paths, os.path.join(scratch, "two"))
        publish_figures(scratch)


if __name__ == "__main__":
    main()
