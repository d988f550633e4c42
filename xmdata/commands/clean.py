"""`xmdata dedup` and `xmdata contamination`: their arguments (light: pydantic only, for --help) and
what they do. The options are CleanParams' fields (tasks/clean/params.py), as in a release config's
`dedup:` and `contamination:` sections and the flows' form."""
from __future__ import annotations

import argparse
import sys

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.clean.params import CleanParams  # pydantic only

INPUT_HELP = "images table (id, path[, latitude, longitude]) or captions table (id, text, language[, image_id])"


def add_dedup_arguments(dedup: argparse.ArgumentParser) -> None:
    dedup.add_argument("input", help=INPUT_HELP)
    add_param_flags(dedup, ParamFlags(CleanParams, skip=("reference_model",)))
    dedup.add_argument("--out", required=True, help="folder for matches.parquet, kept.parquet, rejects.parquet, "
                       "report.json, report.md")
    add_run_options(dedup)


def add_contamination_arguments(contamination: argparse.ArgumentParser) -> None:
    contamination.add_argument("input", help=INPUT_HELP)
    contamination.add_argument("--against", action="append", required=True, metavar="REF",
                               help="a reference, repeatable: a folder of images, an images or captions table, a "
                               "release folder, or a clip-retrieval embeddings folder (with --reference-model)")
    add_param_flags(contamination, ParamFlags(CleanParams))
    contamination.add_argument("--out", required=True, help="folder for matches.parquet, kept.parquet, "
                               "rejects.parquet, report.json, report.md")
    add_run_options(contamination)


def clean(args: argparse.Namespace) -> int:
    from xmdata.flow_run import run_flow
    from xmdata.flows.clean import check_clean, contamination_flow, dedup_flow
    from xmdata.runtime import storage

    against = [storage.absolute(r) for r in getattr(args, "against", None) or []]
    check_clean(args.input, against, args.params, args.command)  # fail in a second, before any server starts
    if args.command == "dedup":
        summary = run_flow(dedup_flow, args, input_path=storage.absolute(args.input), params=args.params)
    else:
        summary = run_flow(contamination_flow, args, input_path=storage.absolute(args.input), against=against,
                           params=args.params)
    report = summary["clean_report"]
    refused = ", ".join(f"{reason} {n}" for reason, n in report["rejected"].items()) or "none"
    print(f"{args.command}: {report['kept']} of {report['rows']} rows kept; refused: {refused} "
          f"-> {storage.join(args.out, 'report.md')}", file=sys.stdout)
    return 0


DEDUP = Command("dedup", "near-duplicate images or captions inside one table: matches, groups (one kept each), "
                "rejects and a report", add_dedup_arguments, clean, reads_tables=True, guide="how-to/clean.md")
CONTAMINATION = Command("contamination", "every row of a table that matches a row of a reference (training data): "
                        "an image folder, a table, a release, clip-retrieval embeddings", add_contamination_arguments,
                        clean, reads_tables=True, guide="how-to/clean.md")
