"""What declares one `xmdata` command: its name, help, flags and runner together (img2dataset's one
signature), and the parser that assembles them. argparse only: every command module imports this."""
from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Callable

from xmdata.exit_codes import BAD_INPUT


@dataclass(frozen=True)
class Command:
    """One command, or a family with `subcommands` (`release verify`, `evaluate <metric>`).

    add_arguments(parser) adds its flags; run(args) does the work and returns the exit status,
    importing what is heavy inside (it runs after the CLI's checks). reads_tables: it reads tables a
    user names, so it takes `--map OLD=NEW,…` (schemas/column_map.py). A sub-command's own `run`,
    `reads_tables` and `guide` are its; `subcommand_dest` names the attribute that says which ran."""

    name: str
    help: str
    add_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    run: Callable[[argparse.Namespace], int] | None = None
    reads_tables: bool = False
    guide: str | None = None  # its page under docs/ (how to use it, with its figures)
    description: str | None = None  # for --help, kept as written (line breaks and all)
    subcommands: tuple[Command, ...] = ()
    subcommand_dest: str | None = None
    subcommand_required: bool = True


class CommandParser(argparse.ArgumentParser):
    """An ArgumentParser that lists its arguments and sub-commands (argparse keeps them in private
    attributes), refuses as every other refusal of `xmdata` does (`xmdata: error: …`, exit 2) with the
    usage of the command refused (argparse gives an unknown flag of `memo prune` the top-level usage)
    and lets a closed stdout be seen (argparse ignores an OSError from printing --help)."""

    def __init__(self, *args, **kwargs):
        self.options: list[argparse.Action] = []  # its arguments, -h first, in the order added
        super().__init__(*args, **kwargs)
        self.commands: dict[str, tuple[CommandParser, str]] = {}  # name: (parser, its one-line help)
        self.command_dest: str | None = None  # the attribute that names which of `commands` ran

    def add_argument(self, *args, **kwargs) -> argparse.Action:
        action = super().add_argument(*args, **kwargs)
        self.options.append(action)
        return action

    def parse_args(self, args=None, namespace=None):
        """As argparse's, but arguments left over are refused by the command they were given to."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.chosen(parsed).error(f"unrecognized arguments: {' '.join(extras)}")
        return parsed

    def chosen(self, parsed: argparse.Namespace) -> CommandParser:
        """The parser of the deepest command PARSED names (`memo prune`'s for `xmdata memo prune …`)."""
        parser = self
        while parser.command_dest and (name := getattr(parsed, parser.command_dest, None)) in parser.commands:
            parser = parser.commands[name][0]
        return parser

    def print_help(self, file=None):
        """As argparse's, but a closed stdout is not ignored: main ends the command quietly, 141."""
        (file or sys.stdout).write(self.format_help())

    def error(self, message: str):
        where = self.prog.removeprefix("xmdata").strip()
        self.exit(BAD_INPUT, f"xmdata: error: {where + ': ' if where else ''}{message}\n{self.format_usage()}")
