"""`xmdata select-images`: pick K geo-diverse images per language (Crossmodal-3600's selection)."""
from __future__ import annotations

import argparse
import sys

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options, seed_int
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.stage_params import SelectImagesParams


def add_arguments(select: argparse.ArgumentParser) -> None:
    select.add_argument("input", help="table with id, latitude, longitude (Parquet/CSV/JSONL) or an image folder (EXIF GPS)")
    add_param_flags(select, ParamFlags(SelectImagesParams))
    select.add_argument("--seed", type=seed_int, default=0)
    select.add_argument("--strict", action="store_true", help="fail when a language gets fewer than K")
    select.add_argument("--out", required=True)
    add_run_options(select)


def select_images(args: argparse.Namespace) -> int:
    import polars as pl

    from xmdata.flow_run import run_flow
    from xmdata.flows.release_preflight import check_image_inputs
    from xmdata.flows.select_images import ShortfallError, select_images_flow
    from xmdata.runtime import storage

    check_image_inputs(args.input, args.params.languages)  # fail fast, before any server starts
    try:
        run_flow(select_images_flow, args, input_path=storage.absolute(args.input), params=args.params,
                 seed=args.seed, strict=args.strict)
        code = 0
    except ShortfallError as exc:
        print(f"xmdata: error: --strict: {exc}", file=sys.stderr)
        code = 1
    with pl.Config(tbl_rows=100, tbl_hide_dataframe_shape=True):
        print(pl.from_arrow(storage.read_parquet(storage.join(args.out, "selection_summary.parquet"))))
    return code


SELECT_IMAGES = Command("select-images", "pick K geo-diverse images per language (Crossmodal-3600)", add_arguments,
                        select_images, reads_tables=True, guide="how-to/select-images.md")
