"""`xmdata download-images`: its arguments (light: pydantic only, for --help) and what it does."""
from __future__ import annotations

import argparse
import sys

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.images.params import DownloadImagesParams  # pydantic only


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("input", help="Parquet/CSV/JSONL with a URL column (every column is kept; id: the row "
                                 "number when there is none)")
    add_param_flags(p, ParamFlags(DownloadImagesParams))
    p.add_argument("--retry-failed", action="store_true",
                   help="fetch again only the rows whose status is transient (http_429, http_5xx, timeout, "
                        "connection_error, truncated); every other row stays byte-identical")
    p.add_argument("--out", required=True, help="output folder or fsspec URL")
    add_run_options(p)


def download_images(args: argparse.Namespace) -> int:
    from xmdata.flow_run import run_flow
    from xmdata.flows.download_images import download_images_flow
    from xmdata.runtime import storage
    from xmdata.tasks.images.runs import read_download_input

    read_download_input(args.input, args.params)  # fail in a second, before any server starts
    summary = run_flow(download_images_flow, args, input_path=storage.absolute(args.input), params=args.params,
                       retry_failed=args.retry_failed)
    statuses = summary["distributions"]["status"]
    total = sum(statuses.values())
    lost = ", ".join(f"{k} {v}" for k, v in statuses.items() if k != "ok") or "none"
    print(f"download-images: {statuses.get('ok', 0)} of {total} rows ok; not downloaded: {lost}; "
          f"{summary['distributions']['ok_rows']['exact_duplicate']} exact duplicate(s)"
          + (f"; {summary['retried_rows']} row(s) retried" if args.retry_failed else ""), file=sys.stdout)
    return 0


DOWNLOAD_IMAGES = Command("download-images", "download the image of every row of a URL table, with a status for "
                          "every row (img2dataset's job, resumable)", add_arguments, download_images, reads_tables=True,
                          guide="how-to/download-images.md")
