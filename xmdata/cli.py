"""The `xmdata` command. Light on purpose: --help must not import torch, Prefect or Dask."""
from __future__ import annotations

import argparse
import os
import sys

EXIT_BAD_INPUT = 2


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--shards", type=positive_int, default=8, help="number of shards (default 8)")
    p.add_argument("--workers", type=positive_int, default=None,
                   help="LocalCluster worker processes (default: one per core)")
    p.add_argument("--dask-address", default=None,
                   help="run on an existing Dask scheduler (tcp://host:port); env XMDATA_DASK_ADDRESS")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="xmdata", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="show Prefect's run logs")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="build the demo release from the shipped sample data, offline")
    demo.add_argument("--out", default="demo-release", help="release folder (default ./demo-release)")
    _add_run_options(demo)

    lid = sub.add_parser("identify-language", help="label every text of a table with its language")
    lid.add_argument("input", help="Parquet, CSV or JSONL with columns id, text")
    lid.add_argument("--out", required=True)
    lid.add_argument("--lid-model", default="lid.176", help="'lid.176' (bundled) or a fastText model path")
    _add_run_options(lid)

    select = sub.add_parser("select-images", help="pick K geo-diverse images per language (Crossmodal-3600)")
    select.add_argument("input", help="table with id, latitude, longitude (Parquet/CSV/JSONL) or an image folder (EXIF GPS)")
    select.add_argument("--languages", default=None, help="language-area file (default: the 36 XM3600 languages)")
    select.add_argument("--per-language", type=positive_int, default=100, help="K images per language (default 100)")
    select.add_argument("--strategy", choices=["greedy", "optimal"], default="greedy")
    select.add_argument("--within", choices=["random", "spread"], default="random",
                        help="inside a level: seeded random, or spread over subdivisions and grid cells")
    select.add_argument("--seed", type=int, default=0)
    select.add_argument("--strict", action="store_true", help="fail when a language gets fewer than K")
    select.add_argument("--out", required=True)
    _add_run_options(select)

    validate = sub.add_parser("validate", help="check a table against a contract in schemas/")
    validate.add_argument("input")
    validate.add_argument("--table", default="captions", help="contract name (captions, images, …)")

    models = sub.add_parser("models", help="model utilities")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    tiny = models_sub.add_parser("build-tiny", help="build tiny real-architecture models offline")
    tiny.add_argument("dir")
    tiny.add_argument("--seed", type=int, default=0)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if not args.verbose:  # before Prefect and Dask read their logging config
        os.environ.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
        os.environ.setdefault("DASK_LOGGING__DISTRIBUTED", "warning")
    os.environ.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    from xmdata.commands import COMMANDS  # heavy imports start here, after argument parsing
    from xmdata.models.base import ModelError
    from xmdata.schemas import ContractError

    try:
        return COMMANDS[args.command](args) or 0
    except (ContractError, ModelError) as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
