"""A small release for `xmdata explain`, built in a second with the real runtime (ingest, shards,
completion records), the real language ID, geocoding, image selection, translation selection and
release gathering; the model stages (beam search + LID + QE, CLIPScore, QA translation) are stand-ins
that write the columns the real ones write, with scores chosen to exercise every selection rule."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
from unittest import mock

import polars as pl
import pyarrow as pa

from xmdata.models.base import ModelSpec
from xmdata.runtime.atomic import write_json_atomic, write_parquet_atomic
from xmdata.runtime.execution import run_stage
from xmdata.runtime.stage import Stage
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.build.rejects import concat_rejects, make_rejects
from xmdata.tasks.release.files import copy_files, gather_rejects, gather_tables
from xmdata.tasks.selection.language_areas import load_language_areas
from xmdata.tasks.selection.select_images import select_images
from xmdata.tasks.stage_params import LanguageIdParams
from xmdata.tasks.translation.language_id import language_id_stage
from xmdata.tasks.translation.outputs import CANDIDATES_FILE, write_run, write_selection
from xmdata.tasks.translation.params import TranslateParams

CAPTIONS = [("c1", "A brown dog runs across the green park.", "i1"), ("c2", "Two children play football.", "i2"),
            ("blank", "   ", "i1"), ("c1", "A second row with the same id.", "i2")]
IMAGES = [("i1", 48.8566, 2.3522), ("i2", 35.6895, 139.6917), ("i3", None, None), ("i4", 48.5734, 7.7521)]
PLACES = {"i1": ("FR", "Île-de-France", "EU"), "i2": ("JP", "Tokyo", "AS"), "i4": ("FR", "Grand Est", "EU")}
# (caption, target): [(lid_label, lid_prob, qe_score)] per beam; qe only where LID passed, as candidate_qe does
CANDIDATES = {("c1", "fr"): [("fr", 0.95, 0.5), ("fr", 0.96, 0.500004), ("en", 0.9, None), ("fr", 0.3, None)],
              ("c1", "ar"): [("fa", 0.8, None), ("fa", 0.7, None)],
              ("c2", "fr"): [("fr", 0.9, 0.2), ("fr", 0.9, 0.4)],
              ("c2", "ar"): [("ar", 0.9, 0.1)]}
CONFIG = """name: explain-test
shards: 2
language_id: {input: captions.jsonl}
image_selection: {input: images.csv, per_language: 1}
translation: {input: captions.jsonl, targets: [fr, ar], translator: {model: "tiny:m2m100"}}
qa_translation: {input: mmeb.jsonl, targets: [fr]}
scoring: {input: captions.jsonl, images: images.csv, clip_model: "tiny:open_clip"}
"""
MODELS = [{"role": "language_id.lid_model", "backend": "fasttext", "ref": "lid.176", "sha256": "e113"},
          {"role": "translation.translator", "backend": "m2m100", "ref": "tiny:m2m100", "sha256": "a233"},
          {"role": "scoring.clip_model", "backend": "open_clip", "ref": "tiny:open_clip", "sha256": "4210"}]


def candidates_fn(table: pa.Table, params: dict):
    rows, refused = [], []
    for r in table.to_pylist():
        if not r["text"].strip():
            refused.append(r["id"])
            rows += [dict(id=r["id"], target_language=t, status="empty_text", beam_rank=0) for t in ("ar", "fr")]
        for (cid, target), beams in CANDIDATES.items():
            rows += [dict(id=cid, target_language=target, status="ok", candidate=f"{target}-{cid}-{rank}",
                          beam_rank=rank, sequence_score=-rank, lid_label=label, lid_prob=prob,
                          lid_match=label == target, qe_score=qe)
                     for rank, (label, prob, qe) in enumerate(beams) if cid == r["id"]]
    frame = pl.DataFrame(rows, schema={"id": pl.String, "target_language": pl.String, "status": pl.String,
                                       "candidate": pl.String, "beam_rank": pl.Int32, "sequence_score": pl.Float32,
                                       "lid_label": pl.String, "lid_prob": pl.Float32, "lid_match": pl.Boolean,
                                       "qe_score": pl.Float32})
    text = dict(zip(table.column("id").to_pylist(), table.column("text").to_pylist()))
    frame = frame.with_columns(column=pl.lit("text"), element=pl.lit(None, pl.Int32), segment=pl.lit(0, pl.Int32),
                               source_text=pl.col("id").replace_strict(text, default=None))
    order = ["id", "column", "element", "segment", "source_text", "target_language", "status", "candidate",
             "beam_rank", "sequence_score", "lid_label", "lid_prob", "lid_match", "qe_score"]
    return frame.select(order).to_arrow(), concat_rejects([make_rejects("translate", "empty_text", refused)])


def clip_fn(table: pa.Table, params: dict):
    frame = pl.from_arrow(table).with_columns(
        status=pl.when(pl.col("text").str.strip_chars() == "").then(pl.lit("rejected")).otherwise(pl.lit("ok")),
        clip_score=pl.when(pl.col("text").str.strip_chars() == "").then(None).otherwise(pl.lit(0.75)))
    empty = frame.filter(pl.col("status") == "rejected")["id"].to_list()
    return frame.to_arrow(), concat_rejects([make_rejects("clip_score", "empty_text", empty)])


def geocode_fn(table: pa.Table, params: dict):
    """What geocode adds (its reverse geocoder and land mask take ~10 s to load)."""
    frame = pl.from_arrow(table)
    located = frame.filter(pl.col("latitude").is_not_null())
    place = {k: pl.Series([PLACES[x][i] for x in located["id"]], dtype=pl.String) for i, k in
             enumerate(("country", "admin1", "continent"))}
    kept = located.with_columns(**place, geo_place_km=pl.lit(1.0, pl.Float32), geo_flag=pl.lit(None, pl.String))
    missing = frame.filter(pl.col("latitude").is_null())["id"].to_list()
    return kept.to_arrow(), concat_rejects([make_rejects("geocode", "no_gps", missing)])


def qa_fn(table: pa.Table, params: dict):
    rows = [dict(id=r["id"], task=r["task"], part=part, target_language="fr", status="ok" if r["id"] == "qa-ok" else
                 "label_missing", candidate=f"fr {part}" if r["id"] == "qa-ok" else None, beam_rank=0)
            for r in table.to_pylist() for part in ("query", "positive")]
    missing = [r["id"] for r in table.to_pylist() if r["id"] != "qa-ok"]
    schema = pa.schema({"id": pa.string(), "task": pa.string(), "part": pa.string(), "target_language": pa.string(),
                        "status": pa.string(), "candidate": pa.string(), "beam_rank": pa.int32()})
    return pa.Table.from_pylist(rows, schema), concat_rejects([make_rejects("translate_qa", "label_missing", missing,
                                                                    ["-> fr: '…'"] * len(missing))])


def build_small_release(root) -> tuple[str, str]:
    """(release folder, its build folder ROOT/release/build)."""
    release, work = os.path.join(root, "release"), os.path.join(root, "release", "build")
    captions = pa.table({k: [c[i] for c in CAPTIONS] for i, k in enumerate(("id", "text", "image_id"))})
    captions = captions.append_column("language", pa.array(["en"] * len(CAPTIONS)))
    lid = run_stage(language_id_stage(ModelSpec("fasttext", LanguageIdParams().lid_model)),
                    ingest(captions, "captions", 2, work).data_paths, work)
    texts = ingest(captions.select(["id", "text"]), "texts", 2, work)
    scored = run_stage(Stage("candidate_qe", "1", candidates_fn, inline_rows=10**6), texts.data_paths, work)
    write_parquet_atomic(pa.concat_tables([pl.read_parquet(p).to_arrow() for p in scored.data_paths]),
                         os.path.join(work, CANDIDATES_FILE))
    params = TranslateParams(targets=["fr", "ar"])
    write_run(work, params, [], translator={"backend": "m2m100", "name_or_path": "tiny:m2m100"})
    with mock.patch("xmdata.tasks.translation.outputs.write_qe_histogram"):  # matplotlib: seconds, not read
        write_selection(work, params, [])
    images = pa.table({k: [c[i] for c in IMAGES] for i, k in enumerate(("id", "latitude", "longitude"))})
    geocoded = run_stage(Stage("geocode", "1", geocode_fn, inline_rows=10**6),
                         ingest(images, "images", 2, work).data_paths, work)
    candidates = pa.concat_tables([pl.read_parquet(p).to_arrow() for p in geocoded.data_paths])
    write_parquet_atomic(select_images(candidates, load_language_areas(), "greedy", 1, "spread", 0),
                         os.path.join(work, "selection.parquet"))
    pairs = captions.select(["id", "text", "image_id"]).append_column(
        "image_path", pa.array([f"images/{c[2]}.png" for c in CAPTIONS]))
    kept = pl.read_parquet(os.path.join(work, "translated.parquet"))
    extra = pa.table({"id": [f"{r['id']}@{r['target_language']}" for r in kept.to_dicts()], "text": kept["text"].to_list(),
                      "image_id": ["i1"] * kept.height, "image_path": ["images/i1.png"] * kept.height})
    run_stage(Stage("clip_score", "1", clip_fn, inline_rows=10**6),
              ingest(pa.concat_tables([pairs, extra]), "pairs", 2, work).data_paths, work)
    qa = pa.table({"id": ["qa-ok", "qa-bad"], "task": ["VOC2007", "A-OKVQA"], "query": ["What is shown?"] * 2,
                   "positive": ["A dog"] * 2})
    translated = run_stage(Stage("translate_qa", "1", qa_fn, inline_rows=10**6),
                           ingest(qa, "qa_instances", 2, work).data_paths, work)
    qa_candidates = pa.concat_tables([pl.read_parquet(p).to_arrow() for p in translated.data_paths])
    write_parquet_atomic(qa_candidates, os.path.join(work, "qa_candidates.parquet"))
    write_parquet_atomic(pl.from_arrow(qa_candidates).filter(pl.col("status") == "ok").select(
        "id", "task", "part", "target_language", pl.col("candidate").alias("target_text"), "beam_rank").to_arrow(),
        os.path.join(work, "qa_parallel.parquet"))
    write_parquet_atomic(make_rejects("select_qa", "label_missing", ["qa-bad"], ["A-OKVQA -> fr"]),
                         os.path.join(work, "qa_rejects.parquet"))
    write_json_atomic({"stages": {}}, os.path.join(work, "summary.json"))
    publish(release, work, ["captions", "language_id", "texts", "candidate_qe", "images", "geocode", "pairs",
                            "clip_score", "qa_instances", "translate_qa"])
    return release, work


def publish(release: str, work: str, stages: list[str]) -> None:
    """The release's own gathering (data/, rejects/, reports/) and a manifest with what explain reads."""
    gather_tables(work, release)
    gather_rejects(work, release, stages)
    copy_files(work, release)
    summary = open(os.path.join(release, "reports", "summary.json"), "rb").read()
    manifest = {"release": {"config": {"text": CONFIG}, "models": MODELS, "work_folder": "build",
                            "files": {"reports/summary.json": {"sha256": hashlib.sha256(summary).hexdigest()}}}}
    write_json_atomic(manifest, os.path.join(release, "manifest.json"))


def without_build(release: str, copy: str) -> str:
    shutil.copytree(release, copy, ignore=shutil.ignore_patterns("build"))
    return copy
