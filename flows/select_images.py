"""Geo-diverse image selection (Crossmodal-3600): geocode every candidate, then pick K images per
language where it is spoken, backing off region -> country -> continent -> global."""
from __future__ import annotations

import os
import polars as pl
import pyarrow as pa
from prefect import flow, get_run_logger
from prefect.artifacts import create_table_artifact

from xmdata.runtime import storage
from xmdata.runtime.atomic import write_parquet_atomic
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.schemas import IMAGES, ContractError
from xmdata.schemas.readers import read_input
from xmdata.tasks.selection.geocode import geocode_stage
from xmdata.tasks.selection.image_folder import images_from_folder
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.selection.language_areas import load_language_areas
from xmdata.tasks.selection.select_images import select_images, selection_summary
from xmdata.tasks.stage_params import DEFAULT_SHARDS, Seed, SelectImagesParams, ShardCount
from xmdata.tasks.selection.selection_map import write_selection_map

from .finish import finish_build


class ShortfallError(RuntimeError):
    """--strict: some language got fewer than K images (outputs are written, for inspection)."""


def read_candidates(input_path: str) -> tuple[pa.Table, pa.Table | None]:
    if os.path.isdir(input_path):
        return images_from_folder(input_path)  # GPS from EXIF; photos without it become rejects
    return read_input(input_path, IMAGES), None


def select_geo_diverse(input_path: str, out: str, shards: int, params: SelectImagesParams,
                       seed: int) -> tuple[list[StageReport], dict, pa.Table]:
    if seed < 0:  # the UI's form takes any integer; numpy's generators do not
        raise ContractError(f"seed must be a non-negative integer, got {seed}")
    languages, per_language, strategy, within = params.languages, params.per_language, params.strategy, params.within
    areas = load_language_areas(languages)  # a broken area file stops here, before any write
    images, exif_rejects = read_candidates(input_path)
    ingested = ingest(images, "images", shards, out, extra_rejects=exif_rejects)
    geocoded = run_stage(geocode_stage(), ingested.data_paths, out)
    # In id order: the seeded choice must not depend on how many shards geocoding ran in.
    candidates = pa.concat_tables([storage.read_parquet(p) for p in geocoded.data_paths]).sort_by("id")
    selection = select_images(candidates, areas, strategy, per_language, within, seed)
    summary = selection_summary(selection, areas, per_language)
    write_parquet_atomic(selection, storage.join(out, "selection.parquet"))
    write_parquet_atomic(summary, storage.join(out, "selection_summary.parquet"))
    write_selection_map(selection, storage.join(out, "selection_map.png"),
                        f"{strategy} selection, {per_language} per language, seed {seed}")
    levels = pl.from_arrow(selection)["level"].value_counts(sort=True)
    # Side by side: what the other strategy gets in-region on the same candidates (selection is cheap).
    other = "optimal" if strategy == "greedy" else "greedy"
    other_selection = select_images(candidates, areas, other, per_language, within, seed)
    other_summary = selection_summary(other_selection, areas, per_language)
    write_parquet_atomic(other_selection, storage.join(out, f"selection_{other}.parquet"))
    write_parquet_atomic(other_summary, storage.join(out, f"selection_summary_{other}.parquet"))
    in_region = {strategy: sum(summary.column("region").to_pylist()),
                 other: sum(other_summary.column("region").to_pylist())}
    return [ingested, geocoded], {"selection_level": dict(levels.rows()),
                                  "in_region_picks": dict(sorted(in_region.items()))}, summary


@flow(name="select-images")
def select_images_flow(input_path: str, out: str, params: SelectImagesParams = SelectImagesParams(),
                       seed: Seed = 0, strict: bool = False, shards: ShardCount = DEFAULT_SHARDS) -> dict:
    """Pick K images per language of the language-area file (default: the 36 of XM3600).

    Args:
        input_path: images table with id, latitude, longitude, or a folder of photos with EXIF GPS
        out: output folder
        params: languages, K per language, strategy
        seed: seed of every random choice
        strict: fail when a language gets fewer than K images
        shards: the fewest shards for geocoding; more when the input has more rows than XMDATA_SHARD_ROWS a shard

    Docs: docs/how-to/select-images.md; every option: docs/reference/commands.md#select-images.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        reports, distributions, summary = select_geo_diverse(input_path, out, shards, params, seed)
        result = finish_build(out, reports, distributions, f"Image selection from {input_path}",
                              plots=(storage.join(out, "selection_map.png"),))
        report_shortfall(summary, strict)
        return result


def report_shortfall(summary: pa.Table, strict: bool) -> None:
    create_table_artifact(summary.to_pylist(), key="selection-per-language",
                          description="images per language and level; shortfall = K - selected")
    short = {r["language"]: r["shortfall"] for r in summary.to_pylist() if r["shortfall"] > 0}
    if short:
        message = "too few candidates; shortfall per language: " + ", ".join(f"{k} {v}" for k, v in short.items())
        if strict:
            raise ShortfallError(message)
        get_run_logger().warning(message)
