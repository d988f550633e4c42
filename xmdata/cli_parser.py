"""The `xmdata` parser, assembled from every command's declaration (xmdata/commands/: its flags, its
runner, whether it reads tables, its guide): a sub-command per Command, `--map` where a command reads
tables, the docs pointer in each --help. Light: no command's work is imported to build it."""
from __future__ import annotations

import argparse

from xmdata.cli_command import Command, CommandParser
from xmdata.cli_docs import docs_epilog
from xmdata.runtime import settings

DESCRIPTION = "The `xmdata` command. Light on purpose: --help must not import torch, Prefect or Dask."
MAP_HELP = "rename input columns before the contract check, e.g. ImageID=id,Latitude=latitude"


def build_parser() -> CommandParser:
    from xmdata.commands import COMMANDS

    parser = CommandParser(prog="xmdata", description=DESCRIPTION,
                           formatter_class=argparse.RawDescriptionHelpFormatter,
                           epilog="environment (runtime/settings.py):\n  " + "\n  ".join(settings.describe())
                                  + "\n\ndocs: docs/ (./run docs serves them), every command: docs/reference/commands.md")
    parser.add_argument("-v", "--verbose", action="store_true", help="show Prefect's run logs")
    _add_commands(parser, COMMANDS, "command", required=True)
    return parser


def _add_commands(parser: CommandParser, commands: tuple[Command, ...], dest: str, required: bool,
                  path: tuple[str, ...] = ()) -> None:
    sub = parser.add_subparsers(dest=dest, required=required)
    parser.command_dest = dest
    for command in commands:
        here = (*path, command.name)
        child = sub.add_parser(command.name, help=command.help, description=command.description,
                               epilog=docs_epilog(here), formatter_class=argparse.RawDescriptionHelpFormatter)
        parser.commands[command.name] = (child, command.help)
        if command.add_arguments:
            command.add_arguments(child)
        if command.subcommands:
            _add_commands(child, command.subcommands, command.subcommand_dest, command.subcommand_required, here)
        if command.reads_tables:  # schemas/column_map.py
            child.add_argument("--map", default=None, metavar="OLD=NEW,…", help=MAP_HELP)
        if command.run:  # a sub-command's own runner replaces its family's
            child.set_defaults(runner=command.run)
