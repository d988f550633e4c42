"""The explore page at Crossmodal-3600's size: 3,600 images, 36 languages x 100 selected, 130k captions
with CLIPScores, 126k translations (the English captions into 35 targets) with 4 candidates each,
20k rejects. Prints the time to write explore/, its files' sizes, and in Debian's Chromium the time to
open the page from file://, to filter by language, and to open a translation with its candidates —
for the data as a JS object literal (what the page uses) and as `JSON.parse("…")`.

    .venv/bin/python -m bench explore_page
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import time

import numpy as np
import polars as pl

IMAGES, LANGUAGES, PER_LANGUAGE, CAPTIONS, CANDIDATES, REJECTS = 3_600, 36, 100, 130_000, 4, 20_000
WORDS = {"en": "a the dog cat red blue street market people child tree house river bridge boat car".split(),
         "ru": "собака кошка красный улица рынок люди ребёнок дерево дом река мост".split(),
         "zh": "狗 猫 红色 街道 市场 人们 孩子 树 房子 河 桥".split(),
         "ar": "كلب قطة أحمر شارع سوق ناس طفل شجرة بيت نهر جسر".split(),
         "hi": "कुत्ता बिल्ली लाल सड़क बाज़ार लोग बच्चा पेड़ घर नदी पुल".split()}


def sentences(rng, n: int, lang: str) -> list[str]:
    words = WORDS.get(lang, WORDS[["en", "ru", "zh", "ar", "hi"][hash(lang) % 5]])
    picks = rng.integers(0, len(words), (n, 12))
    return [" ".join(words[w] for w in row[:6 + row[0] % 6]).capitalize() + "." for row in picks]


def synthetic_release(root: str, seed: int = 0) -> None:
    rng = np.random.default_rng(seed)
    langs = ["en"] + [f"l{i:02d}" for i in range(1, LANGUAGES)]
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    os.makedirs(os.path.join(root, "rejects"), exist_ok=True)
    image_ids = [f"{i:016x}" for i in rng.integers(0, 2**63, IMAGES)]
    lat, lon = np.degrees(np.arcsin(rng.uniform(-1, 1, IMAGES))), rng.uniform(-180, 180, IMAGES)
    pick = np.arange(IMAGES)
    pl.DataFrame({"language": np.repeat(langs, PER_LANGUAGE), "image_id": [image_ids[i] for i in pick],
                  "latitude": lat[pick], "longitude": lon[pick], "country": rng.choice(["DE", "IN", "BR", "KE"], IMAGES),
                  "admin1": "x", "continent": "EU", "level": rng.choice(["region", "country", "continent", "global"], IMAGES),
                  "strategy": "greedy", "seed": 0}).write_parquet(os.path.join(root, "data", "images.parquet"))
    per = CAPTIONS // LANGUAGES
    language = np.repeat(langs, per)
    image = rng.integers(0, IMAGES, len(language))
    text = [t for lang in langs for t in sentences(rng, per, lang)]
    ids = [f"{image_ids[i]}-{lang}-{k}" for k, (i, lang) in enumerate(zip(image, language))]
    pl.DataFrame({"id": ids, "text": text, "language": language, "image_id": [image_ids[i] for i in image],
                  "lid_label": language, "lid_prob": rng.uniform(0.5, 1, len(ids)).astype(np.float32)}
                 ).write_parquet(os.path.join(root, "data", "captions.parquet"))
    english = [k for k in range(len(ids)) if language[k] == "en"]
    rows = [(ids[k], text[k], target) for k in english for target in langs[1:]]
    units = pl.DataFrame(rows, schema=["id", "source_text", "target_language"], orient="row").with_columns(
        column=pl.lit("text"), element=pl.lit(None, pl.Int32))
    kept = rng.uniform(0, 1, units.height) > 0.2
    translated = sentences(rng, units.height, "ru")
    units.with_columns(text=pl.Series(translated).set(pl.Series(~kept), None), beam_rank=pl.lit(0, pl.Int32),
                       sequence_score=pl.lit(-0.5, pl.Float32), lid_label="target_language", lid_prob=pl.lit(0.9, pl.Float32),
                       qe_score=pl.Series(rng.uniform(0, 1, units.height), dtype=pl.Float32), candidates=pl.lit(4, pl.Int32),
                       lid_passed=pl.lit(3, pl.Int32), qe_quartile=pl.lit(2, pl.Int8),
                       status=pl.Series(np.where(kept, "ok", "rejected")),
                       reason=pl.Series(np.where(kept, None, "below_min_qe"))
                       ).write_parquet(os.path.join(root, "data", "translations.parquet"))
    cands = units.join(pl.DataFrame({"beam_rank": pl.Series(range(CANDIDATES), dtype=pl.Int32)}), how="cross")
    cands.with_columns(segment=pl.lit(0, pl.Int32), status=pl.lit("ok"),
                       candidate=pl.Series(sentences(rng, cands.height, "ru")),
                       sequence_score=pl.Series(rng.uniform(-3, 0, cands.height), dtype=pl.Float32),
                       lid_label="target_language", lid_prob=pl.Series(rng.uniform(0, 1, cands.height), dtype=pl.Float32),
                       lid_match=pl.lit(True), qe_score=pl.Series(rng.uniform(0, 1, cands.height), dtype=pl.Float32)
                       ).write_parquet(os.path.join(root, "data", "translation_candidates.parquet"))
    kept_ids = [f"{i}@{t}" for (i, _, t), k in zip(rows, kept) if k]
    all_ids = ids + kept_ids
    pl.DataFrame({"id": all_ids, "image_path": [f"images/{image_ids[i % IMAGES]}.jpg" for i in range(len(all_ids))],
                  "status": "ok", "clip_score": rng.uniform(0.3, 1, len(all_ids)),
                  "image_id": [image_ids[i % IMAGES] for i in range(len(all_ids))]}
                 ).write_parquet(os.path.join(root, "data", "clip_scores.parquet"))
    pl.DataFrame({"stage": rng.choice(["language_id", "geocode", "clip_score"], REJECTS),
                  "reason": rng.choice(["empty_text", "no_gps", "lid_mismatch", "duplicate_id"], REJECTS),
                  "row_id": [f"r{i}" for i in range(REJECTS)], "value": "x"}
                 ).write_parquet(os.path.join(root, "rejects", "mixed.parquet"))


def open_in_chromium(page_url: str, runs: int = 3) -> dict:
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests"))
    from playwright.sync_api import sync_playwright
    from support.prefect_ui import launch_chromium

    times = {"open": [], "filter": [], "detail": []}
    with sync_playwright() as p:
        browser = launch_chromium(p)
        for _ in range(runs):
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            start = time.perf_counter()
            page.goto(page_url)
            page.wait_for_selector("body[data-ready='1']", timeout=120_000)
            times["open"].append(time.perf_counter() - start)
            page.click("nav button[data-tab=texts]")
            start = time.perf_counter()
            page.select_option("#f-lang", "l07")
            page.wait_for_function("document.querySelector('#count').dataset.n !== undefined && "
                                   "document.querySelector('#f-lang').value === 'l07' && "
                                   "+document.querySelector('#count').dataset.n < 20000")
            times["filter"].append(time.perf_counter() - start - 0.12)  # less the page's typing debounce
            start = time.perf_counter()
            page.locator("#rows tbody tr", has_text="@l07").first.click()
            page.locator("#detail table.cands").wait_for(timeout=60_000)
            times["detail"].append(time.perf_counter() - start)
            page.close()
        browser.close()
    return {k: min(v) for k, v in times.items()}


def main() -> None:
    from xmdata.tasks.release.explore import write_explore

    root = tempfile.mkdtemp(prefix="xmdata-explore-bench-")
    try:
        start = time.perf_counter()
        synthetic_release(root)
        print(f"synthetic release: {time.perf_counter() - start:.1f} s")
        start = time.perf_counter()
        files = write_explore(root, "xm3600-scale")
        print(f"write explore/: {time.perf_counter() - start:.1f} s")
        sizes = {f: os.path.getsize(os.path.join(root, f)) for f in files}
        shards = [s for f, s in sizes.items() if "/candidates/" in f]
        print(f"index.html {sizes['explore/index.html'] / 1e3:.0f} kB, data.js {sizes['explore/data.js'] / 1e6:.1f} MB, "
              f"{len(shards)} candidate files {sum(shards) / 1e6:.1f} MB in all ({max(shards) / 1e6:.2f} MB the largest)")
        chosen = open_in_chromium(f"file://{root}/explore/index.html")
        data = os.path.join(root, "explore", "data.js")
        text = open(data, encoding="utf-8").read()
        literal = text[text.index("{"):text.rindex("}") + 1]
        open(data, "w", encoding="utf-8").write(f"window.XM_DATA=JSON.parse({json.dumps(literal, ensure_ascii=False)});\n")
        parsed = open_in_chromium(f"file://{root}/explore/index.html")
        for name, t in (("object literal (the page's)", chosen), ("JSON.parse(\"…\")", parsed)):
            print(f"Chromium, {name}: open {t['open']:.2f} s, filter by language {t['filter']:.3f} s, "
                  f"open a translation with its candidates {t['detail']:.2f} s (best of 3)")
        print(f"ratio open JSON.parse / literal: {parsed['open'] / chosen['open']:.2f}")
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
