"""`xmdata validate`: check a table against a contract in schemas/, row by row."""
from __future__ import annotations

import argparse

from xmdata.cli_command import Command
from xmdata.exit_codes import FAILED, OK


def add_arguments(validate: argparse.ArgumentParser) -> None:
    validate.add_argument("input")
    validate.add_argument("--table", default="captions", help="contract name (captions, images, …)")


def validate(args: argparse.Namespace) -> int:
    from xmdata.schemas import CONTRACTS, ContractError
    from xmdata.schemas.readers import read_input
    from xmdata.tasks.build.validate_rows import describe_rejects, would_reject

    if args.table not in CONTRACTS:
        raise ContractError(f"unknown table {args.table!r}; known: {', '.join(sorted(CONTRACTS))}")
    table = read_input(args.input, CONTRACTS[args.table])
    rejects = would_reject(table, CONTRACTS[args.table])
    print(f"{args.input}: {table.num_rows} rows have the types of '{args.table}'; "
          f"{table.num_rows - rejects.num_rows} would be kept, {rejects.num_rows} refused")
    for line in describe_rejects(rejects):
        print(f"  {line}")
    return FAILED if rejects.num_rows else OK


VALIDATE = Command("validate", "check a table against a contract in schemas/", add_arguments, validate,
                   reads_tables=True, guide="how-to/commands.md")
