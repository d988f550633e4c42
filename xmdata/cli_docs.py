"""Where each command is documented, for its --help: its reference section and its guide under docs/.
Light (imported by the command line to build --help, and by docs_reference.py to write the reference
from the same parser)."""
from __future__ import annotations

import argparse

from xmdata.cli_command import CommandParser
from xmdata.commands import COMMANDS

COMMANDS_PAGE = "docs/reference/commands.md"
# Each command's guide under docs/ (how to use it, with its figures), as the command declares it: the
# reference page links it and `xmdata COMMAND --help` names it.
GUIDES = {command.name: command.guide for command in COMMANDS if command.guide}


def docs_epilog(path: tuple[str, ...]) -> str:
    """What `xmdata COMMAND --help` ends with: the command's reference section and its guide (printed as
    written: RawDescriptionHelpFormatter, as a wrapped path would break at its hyphens)."""
    guide = GUIDES.get(path[0]) if path else None
    return f"docs: {COMMANDS_PAGE}#{anchor(path)}" + (f"\nguide: docs/{guide}" if guide else "")


def anchor(path: tuple[str, ...]) -> str:
    """The heading id of a command: `release verify` -> release-verify."""
    return "-".join(path) or "xmdata"


def subcommands(parser: CommandParser) -> dict[str, tuple[CommandParser, str]]:
    """{name: (parser, its one-line help)} of PARSER's subcommands, in the order they were added."""
    return parser.commands


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser, help) for PARSER and every subcommand below it, depth first."""
    yield path, parser, parser.description or ""
    for name, (child, help_text) in subcommands(parser).items():
        for item in walk(child, (*path, name)):
            yield item if item[0] != (*path, name) else (item[0], item[1], help_text)
