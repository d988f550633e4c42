"""xmdata's download against img2dataset, side by side in one run, on the same URL list:

A local server (tests/support/image_server.py, its own process, 50 ms before every answer) serves IMAGES
generated JPEGs behind a URL list that loses ~20 % like real ones (404, 503, HTML served as JPEG, noai,
truncated bodies, redirects, a loop, a bomb, a 10 GB Content-Length). Each tool runs as a child
process with the same concurrency (one process, THREADS connections), originals kept (img2dataset:
`resize_mode=no, skip_reencode=True`, which still decodes every image as xmdata does), and is
measured by wall time and CPU-s of it and its children (getrusage). xmdata runs its build
(ingest, the stage runner, downloads.parquet) in-process, without the Prefect server a CLI run
reports to. img2dataset is installed by the bench into its own venv (XMDATA_CACHE/bench/img2dataset).

    ./run bench download
"""
from __future__ import annotations

import io
import json
import multiprocessing
import os
import random
import resource
import subprocess
import sys
import tempfile
import time

I2D_VERSION = "1.47.0"
IMAGES, THREADS, LATENCY_S, SHARDS, REPEATS = 3000, 64, 0.05, 4, 2
FAULTS = (("/missing", 0.05), ("/down/x", 0.04), ("/html", 0.03), ("/noai/", 0.03), ("/truncated", 0.02),
          ("/redirect/", 0.02), ("/loop/a", 0.005), ("/bomb", 0.005), ("/huge", 0.005))
# img2dataset's three statuses, from each of xmdata's reasons (a failed decode is its failed_to_resize).
I2D_STATUS = {"ok": "success", "not_an_image": "failed_to_resize", "corrupt_image": "failed_to_resize",
              "decompression_bomb": "failed_to_resize"}


def make_images(n: int) -> dict[str, bytes]:
    from PIL import Image

    rng = random.Random(0)
    images = {}
    for i in range(n):
        image = Image.effect_noise((160, 120), 40 + i % 60).convert("RGB")
        image.paste((rng.randrange(256), rng.randrange(256), rng.randrange(256)), (0, 0, 80, 60))
        out = io.BytesIO()
        image.save(out, "JPEG", quality=85)
        images[str(i)] = out.getvalue()
    return images


def url_paths(n: int) -> list[str]:
    rng, paths = random.Random(1), []
    for i in range(n):
        roll, path = rng.random(), f"/img/{i}"
        for fault, share in FAULTS:
            if roll < share:
                path = fault + (str(i) if fault.endswith("/") else "")
                break
            roll -= share
        paths.append(path)
    return paths


def serve(port_queue, n: int) -> None:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from support.image_server import ImageServer

    server = ImageServer(make_images(n), latency=LATENCY_S)
    port_queue.put(server.url)
    while True:
        time.sleep(3600)


def timed(command: list[str], env: dict | None = None) -> tuple[float, float]:
    """(wall s, CPU-s of the command and every process it waited for)."""
    before, started = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    subprocess.run(command, check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall, after = time.perf_counter() - started, resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)


XMDATA_RUN = """
import sys
from xmdata.flows.download_images import download_images
from xmdata.runtime.session import execution_session
from xmdata.tasks.images.params import DownloadImagesParams, HttpOptions
params = DownloadImagesParams(http=HttpOptions(threads=int(sys.argv[3]), per_host=int(sys.argv[3]), retries=0))
with execution_session("inprocess"):
    download_images(sys.argv[1], sys.argv[2], int(sys.argv[4]), params)
"""


def img2dataset_venv() -> str:
    """The venv's img2dataset command, installed on first use (pip, from the package registry)."""
    from xmdata.runtime import settings

    venv = os.path.join(settings.CACHE.get(), "bench", f"img2dataset-{I2D_VERSION}")
    command = os.path.join(venv, "bin", "img2dataset")
    if not os.path.exists(command):
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([os.path.join(venv, "bin", "pip"), "install", "-q", f"img2dataset=={I2D_VERSION}"], check=True)
    return command


def run_xmdata(urls: str, out: str) -> tuple[float, float, dict[str, str]]:
    import polars as pl

    wall, cpu = timed([sys.executable, "-c", XMDATA_RUN, urls, out, str(THREADS), str(SHARDS)])
    rows = pl.read_parquet(os.path.join(out, "downloads.parquet"))
    return wall, cpu, dict(zip(rows["id"], rows["status"]))


def run_img2dataset(command: str, urls: str, out: str) -> tuple[float, float, dict[str, str]]:
    import polars as pl
    from xmdata.runtime.settings import child_env

    args = [command, "--url_list", urls, "--input_format", "parquet", "--url_col", "url", "--output_folder", out,
            "--output_format", "files", "--processes_count", "1", "--thread_count", str(THREADS),
            "--resize_mode", "no", "--skip_reencode", "True", "--retries", "0", "--timeout", "10",
            "--number_sample_per_shard", str(IMAGES // SHARDS), "--save_additional_columns", '["id"]',
            "--disallowed_header_directives", '["noai","noimageai"]', "--enable_wandb", "False"]
    wall, cpu = timed(args, child_env(NO_ALBUMENTATIONS_UPDATE="1"))  # no version check over the network
    rows = pl.concat([pl.read_parquet(os.path.join(out, f), columns=["id", "status"])
                      for f in sorted(os.listdir(out)) if f.endswith(".parquet")])
    return wall, cpu, dict(zip(rows["id"], rows["status"]))


def counts(statuses: dict[str, str]) -> dict[str, int]:
    found: dict[str, int] = {}
    for status in statuses.values():
        found[status] = found.get(status, 0) + 1
    return dict(sorted(found.items(), key=lambda kv: (-kv[1], kv[0])))


def main() -> dict:
    import pyarrow as pa
    import pyarrow.parquet as pq

    command = img2dataset_venv()
    queue = multiprocessing.get_context("spawn").Queue()
    server = multiprocessing.get_context("spawn").Process(target=serve, args=(queue, IMAGES), daemon=True)
    server.start()
    try:
        base = queue.get(timeout=300)
        with tempfile.TemporaryDirectory(prefix="xmdata-bench-download-") as tmp:
            urls = os.path.join(tmp, "urls.parquet")
            pq.write_table(pa.table({"id": [f"{i:06d}" for i in range(IMAGES)],
                                     "url": [base + p for p in url_paths(IMAGES)]}), urls)
            runs = {"xmdata": [], "img2dataset": []}
            for i in range(REPEATS):  # alternated, best kept: the machine is shared
                runs["xmdata"].append(run_xmdata(urls, os.path.join(tmp, f"x{i}")))
                runs["img2dataset"].append(run_img2dataset(command, urls, os.path.join(tmp, f"i{i}")))
    finally:
        server.kill()
    return report({name: min(r, key=lambda run: run[0]) for name, r in runs.items()})


def report(best: dict) -> dict:
    figures = {}
    for name, (wall, cpu, statuses) in best.items():
        figures[name] = {"images_per_s": round(IMAGES / wall, 1), "cpu_s_per_1000": round(cpu * 1000 / IMAGES, 2),
                         "wall_s": round(wall, 2), "status": counts(statuses)}
        print(f"{name:12s} {figures[name]['images_per_s']:8.1f} rows/s  {figures[name]['cpu_s_per_1000']:6.2f} "
              f"CPU-s per 1,000 rows  ({wall:.1f} s, {cpu:.1f} CPU-s)  statuses {json.dumps(figures[name]['status'])}")
    ours, theirs = best["xmdata"][2], best["img2dataset"][2]
    mapped = {i: I2D_STATUS.get(s, "failed_to_download") for i, s in ours.items()}
    differ = sorted(i for i in theirs if mapped.get(i) != theirs[i])
    figures["same_outcome_rows"], figures["different_outcome_rows"] = len(theirs) - len(differ), differ[:20]
    x, i = figures["xmdata"], figures["img2dataset"]
    print(f"xmdata / img2dataset: {x['images_per_s'] / i['images_per_s']:.2f}x rows/s, "
          f"{x['cpu_s_per_1000'] / i['cpu_s_per_1000']:.2f}x CPU-s per row; per-row outcomes (xmdata's reasons "
          f"mapped to img2dataset's three statuses) agree on {len(theirs) - len(differ)} of {len(theirs)} rows"
          + (f"; differ: {differ[:10]}" if differ else ""))
    return figures


if __name__ == "__main__":
    main()
