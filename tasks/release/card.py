"""README.md of a release: a dataset card in the Hugging Face convention (YAML header with languages,
license, task categories and one config per Parquet table), then what the data is and how it was made,
from the release's own files. No dates in it: the same release gives the same card."""
from __future__ import annotations

import json
import os

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from xmdata.tasks.evaluation.caption_stats import caption_statistics
from xmdata.tasks.translation.report import report_markdown

from .embed_images import IMAGE_COLUMN, JPEG_QUALITY, table_files
from .hf_features import features_of, yaml_features

TASKS = {"captions": ["image-to-text", "text-to-image"], "translations": ["translation"],
         "qa_parallel": ["visual-question-answering"], "clip_scores": ["image-to-text"]}


def _read(release: str, name: str) -> pl.DataFrame | None:
    files = table_files(release, name)  # one file, or an embedded table's numbered parts
    return pl.read_parquet(files, columns=_plain_columns(files[0])) if files else None


def _plain_columns(path: str) -> list[str]:
    """Every column but an embedded `image` (its bytes are not what the card counts)."""
    return [n for n in pq.read_schema(path).names if n != IMAGE_COLUMN or not _embedded(path)]


def _embedded(path: str) -> bool:
    schema = pq.read_schema(path)
    return IMAGE_COLUMN in schema.names and pa.types.is_struct(schema.field(IMAGE_COLUMN).type)


def _fmt(value) -> str:
    return "–" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def _table(rows: list[dict]) -> str:
    if not rows:
        return "_none_\n"
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(_fmt(r[k]) for k in head) + " |" for r in rows]
    return "\n".join(lines) + "\n"


def header(config, tables: dict[str, str], languages: list[str], rows: int, embedded: dict | None = None,
           release: str | None = None) -> str:
    """The YAML header. EMBEDDED (a release with its images inside, tasks/release/embed_images.py): each
    config's data_files lists its numbered files, and `dataset_info` gives every config's features (the
    Image feature included), as the schema metadata does. Without images inside the header is as before,
    so an existing release keeps its bytes and its release_sha256."""
    size = "n<1K" if rows < 1_000 else "1K<n<10K" if rows < 10_000 else "10K<n<100K" if rows < 100_000 else "n>100K"
    embedded = embedded or {}
    def paths(name):
        files = embedded[name]["files"] if name in embedded else [f"data/{name}.parquet"]
        return files[0] if len(files) == 1 else files
    meta = {"pretty_name": config.name, "license": config.license, "language": languages,
            "task_categories": sorted({t for name in tables for t in TASKS.get(name, [])}),
            "size_categories": [size],
            "configs": [{"config_name": name, "data_files": [{"split": "test", "path": paths(name)}]}
                        for name in tables]}
    if embedded and release:
        meta["dataset_info"] = [{"config_name": name, "features": yaml_features(features_of(
            pq.read_schema(table_files(release, name)[0]), {IMAGE_COLUMN} if name in embedded else set()))}
            for name in tables]
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, allow_unicode=True) + "---\n"


def _files_named(name: str, embedded: dict | None) -> str:
    files = (embedded or {}).get(name, {}).get("files") or [f"data/{name}.parquet"]
    return files[0] if len(files) == 1 else f"{files[0]} … ({len(files)} files)"


def images_section(config, embedded: dict) -> str:
    """Which tables hold their images, how many, and how (original bytes or resized JPEGs)."""
    how = ("each image's original file, byte for byte" if config.image_max_side is None else
           f"the original file where its longer side is at most {config.image_max_side} pixels, else a JPEG "
           f"resized to {config.image_max_side} (quality {JPEG_QUALITY})")
    rows = [{"config": n, "files": len(e["files"]), "images": e["images"], "missing images": e["missing"],
             "bad images": e.get("bad", 0)} for n, e in embedded.items()]
    bad = [f"- `{n}`: `{path}`: {reason}" for n, e in embedded.items() for path, reason in e.get("bad_reasons", [])]
    return ("## Images\n\nThe images are inside the tables: an `image` column of `Image` structs "
            f"`{{bytes, path}}` holding {how}; `path` is the image's path as the source named it. A row whose "
            "image is missing (its file was not there at the build, or no images table resolves its image_id) "
            "has a null image, counted here; so has a row whose file is no image (corrupt, truncated, not an "
            "image), a bad image.\n\n" + _table(rows)
            + ("\nBad images (the first of each table), with why they did not decode:\n\n" + "\n".join(bad) + "\n"
               if bad else ""))


def caption_section(captions: pl.DataFrame) -> str:
    """Per language (the declared one where every caption has it, else lid.176's) over captions with an image."""
    if "image_id" not in captions.columns or captions["image_id"].null_count() == captions.height:
        return ""
    captions = captions.filter(pl.col("image_id").is_not_null())
    if "language" in captions.columns and captions["language"].null_count():
        captions = captions.drop("language")  # an optional column the input left empty
    language = "language" if "language" in captions.columns else "lid_label"
    stats = caption_statistics(captions.with_columns(pl.col("image_id").cast(pl.String)).to_arrow(),
                               language=language)["per_language"]
    rows = [{"language": k, "captions": v["captions"], "images": v["images"], "mean words": v["mean_words"],
             "mean characters": v["mean_chars"]} for k, v in stats.items()]
    agree = ""
    if "language" in captions.columns:
        same = captions.filter(pl.col("language") == pl.col("lid_label")).height
        agree = f"\nfastText lid.176 agrees with the declared language on {same} of {captions.height} captions.\n"
    return "## Caption statistics\n\n" + _table(rows) + agree


def download_section(downloads: pl.DataFrame) -> str:
    """Rows per download status: every image the URLs did not give, by reason."""
    counts = downloads.group_by("status").agg(rows=pl.len()).sort(["rows", "status"], descending=[True, False])
    return ("## Image downloads\n\nEvery row of `data/image_downloads.parquet` has its status, as of the build "
            "(the network's answers are not reproducible; `manifest.json` covers what was fetched).\n\n"
            + _table(counts.to_dicts()))


def backoff_section(per_language: pl.DataFrame) -> str:
    levels = ["region", "country", "continent", "global"]
    totals = {level: int(per_language[level].sum()) for level in levels}
    short = per_language.filter(pl.col("shortfall") > 0)
    return ("## Image selection: back-off\n\nImages picked at each level (region → country → continent → "
            "global), all languages: " + ", ".join(f"{k} {v}" for k, v in totals.items())
            + f"; languages short of their quota: {short.height}.\n\n" + _table(per_language.to_dicts())
            + "\n![selection map](plots/selection_map.png)\n")


def clean_section(config, matches: pl.DataFrame | None, summary: dict) -> str:
    """What was checked against what (before any stage selected, translated or scored), with counts."""
    checks = []
    if config.dedup:
        checks.append("near-duplicates inside the set")
    if config.contamination:
        checks.append("overlap with " + ", ".join(f"`{os.path.basename(a)}`" for a in config.contamination.against))
    refused = [{"table": stage.removeprefix("clean_"), "rows": s["rows_in"], "kept": s["rows_out"],
                "refused": ", ".join(f"{k}: {v}" for k, v in s["rejected"].items()) or "0"}
               for stage, s in summary["stages"].items() if stage.startswith("clean_")]
    text = ("## Clean sets\n\nThe inputs were checked for " + " and ".join(checks) + " before any stage selected, "
            "labelled, translated or scored a row (an image refused takes its captions with it). Every match is in "
            "`data/clean_matches.parquet` (method, score, the raw measure and its unit); `xmdata explain DIR ID` "
            "shows a row's.\n\n" + _table(refused))
    if matches is not None and matches.height:
        by = matches.group_by("check", "table", "method", "match_source").agg(matches=pl.len(),
                                                                                  rows=pl.col("id").n_unique())
        text += "\n" + _table(by.sort("check", "table", "method", "match_source").to_dicts())
    return text


def build_card(release: str, config, tables: dict[str, str], summary: dict, embedded: dict | None = None) -> str:
    data = {name: _read(release, name) for name in tables}
    languages = set()
    if (c := data.get("captions")) is not None:
        languages |= set(c["language" if "language" in c.columns else "lid_label"].drop_nulls())
    for section in (config.translation, config.qa_translation):
        languages |= set(section.targets) if section else set()
    if (p := data.get("images_per_language")) is not None:
        languages |= set(p["language"])
    # datasets.load_dataset cannot read a Parquet file without rows, so an empty table is published
    # (a zero is a fact) but not declared as a config.
    loadable = {n: d for n, d in tables.items() if data[n].height}
    parts = [header(config, loadable, sorted(languages), max((d.height for d in data.values()), default=0),
                    embedded, release),
             f"# {config.name}\n\n{config.description}\n\nBuilt by xmdata from its release config (seed "
             f"{config.seed}); `manifest.json` holds the sha256 and row count of every file, the config, package "
             f"versions, models and the code's commit. Check a copy with `xmdata release verify DIR`. Browse it "
             f"in `explore/index.html` (or `xmdata explore DIR`), ask why a row is where it is with `xmdata explain "
             f"DIR ID`; `croissant.json` describes it in Croissant 1.1 with the Responsible-AI fields.\n",
             "## Tables\n\n" + _table([{"config": n, "file": _files_named(n, embedded), "rows": data[n].height or "0 (not a config)",
                                        "what": d} for n, d in tables.items()])]
    if embedded:
        parts.append(images_section(config, embedded))
    if (d := data.get("image_downloads")) is not None:
        parts.append(download_section(d))
    if getattr(config, "dedup", None) or getattr(config, "contamination", None):
        parts.append(clean_section(config, data.get("clean_matches"), summary))
    if data.get("captions") is not None:
        parts.append(caption_section(data["captions"]))
    if data.get("images_per_language") is not None:
        parts.append(backoff_section(data["images_per_language"]))
    report_path = os.path.join(release, "reports", "translation_report.json")
    if os.path.exists(report_path):
        report = json.load(open(report_path, encoding="utf-8"))["targets"]
        parts.append("## Translation acceptance and QE (COMETKiwi)\n\n"
                     + report_markdown(report).replace("QE distribution of kept", "")
                     + "\n![QE of kept translations](plots/qe_histogram.png)\n")
    if (q := data.get("qa_counts")) is not None:
        parts.append("## Question/Answer translation outcomes\n\n" + _table(q.to_dicts()))
    if (s := data.get("clip_scores")) is not None:
        by_language = (s.filter(pl.col("status") == "ok").group_by("language")
                       .agg(pairs=pl.len(), mean_clip_score=pl.col("clip_score").mean().round(4)).sort("language"))
        parts.append("## CLIPScore\n\n" + _table(by_language.to_dicts()))
    rejects = [{"stage": stage, "rejected": ", ".join(f"{k}: {v}" for k, v in s["rejected"].items()) or "0"}
               for stage, s in summary["stages"].items()]
    parts.append("## Rejected rows\n\nEvery refused row is in `rejects/<stage>.parquet` with its reason.\n\n"
                 + _table(rejects))
    names = list(tables)[:2]
    parts.append("## Loading\n\n```python\nfrom datasets import load_dataset\nds = load_dataset(\"parquet\", "
                 f"data_files={{\"test\": \"data/{names[0] if names else 'captions'}.parquet\"}})\n\nimport polars "
                 "as pl\ndf = pl.read_parquet(\"data/captions.parquet\")\n```\n")
    return "\n".join(parts)
