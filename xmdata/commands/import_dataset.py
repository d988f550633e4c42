"""`xmdata import FORMAT SOURCE --out DIR`: a public dataset's published layout -> the project's
contract tables, by the format's adapter (tasks/importers/formats.py)."""
from __future__ import annotations

import argparse
import sys

from xmdata.cli_command import Command
from xmdata.tasks.importers.formats import FORMATS  # pure data
from xmdata.tasks.importers.options import ImportOptions


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", choices=list(FORMATS))
    p.add_argument("source", help="the downloaded file or folder, in its published layout")
    p.add_argument("--out", required=True, help="folder for <table>.parquet, rejects.parquet, import_report.json")
    p.add_argument("-q", "--quiet", action="store_true", help="no report on stdout (counts unlike the "
                   "publisher's are still said on stderr)")
    for name, field in ImportOptions.model_fields.items():
        flag = "--" + name.replace("_", "-")
        if field.annotation is bool:
            p.add_argument(flag, action="store_true", help=field.description)
        else:
            p.add_argument(flag, default=None, help=field.description)


def import_dataset(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from xmdata.cli_params import flag_error
    from xmdata.runtime import storage
    from xmdata.schemas import ContractError
    from xmdata.tasks.importers.run import import_dataset as run_import, report_markdown

    try:
        options = ImportOptions(**{k: getattr(args, k) for k in ImportOptions.model_fields})
    except ValidationError as exc:
        raise ContractError("; ".join(flag_error(e, set(ImportOptions.model_fields)) for e in exc.errors())) from None
    from xmdata.runtime.folder_lock import one_writer

    with one_writer(args.out):  # one writer of OUT at a time (runtime/folder_lock.py)
        report = run_import(args.format, args.source, args.out, options)
    differences = (report.get("publisher_counts") or {}).get("differences") or []
    if differences:  # said whatever --quiet says: a count unlike the publisher's is never silent
        shown = "; ".join(differences[:5]) + (f"; … {len(differences) - 5} more" if len(differences) > 5 else "")
        print(f"xmdata: warning: {args.format}: {len(differences)} count(s) differ from the publisher's "
              f"(import_report.md lists them): {shown}", file=sys.stderr)
    if not args.quiet:
        print(report_markdown(report))
        print(f"-> {storage.absolute(args.out)}")
    return 0


IMPORT = Command("import", "a public dataset's published layout -> the project's contract tables", add_arguments,
                 import_dataset, reads_tables=True, guide="how-to/importers.md",
                 description="\n".join(f"{name}: {text}" for name, (_, text) in FORMATS.items()))
