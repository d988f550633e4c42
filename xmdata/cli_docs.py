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


DOCS_MARK = "docs: "


def docs_epilog(path: tuple[str, ...]) -> str:
    """What `xmdata COMMAND --help` ends with: the command's reference section and its guide."""
    guide = GUIDES.get(path[0]) if path else None
    return f"{DOCS_MARK}{COMMANDS_PAGE}#{anchor(path)}" + (f"\nguide: docs/{guide}" if guide else "")


def _keeping_paths(formatter_class: type) -> type:
    """FORMATTER_CLASS, printing the docs lines as they are (a wrapped path breaks at its hyphens)."""
    class Formatter(formatter_class):
        def _fill_text(self, text, width, indent):
            body, mark, docs = text.rpartition(DOCS_MARK)
            if not mark:
                return super()._fill_text(text, width, indent)
            head = super()._fill_text(body, width, indent) + "\n\n" if body.strip() else ""
            return head + "\n".join(indent + line for line in (mark + docs).splitlines())
    return Formatter


def name_docs(parser: argparse.ArgumentParser) -> None:
    """Every subcommand's --help ends with its pages (build_parser calls this last)."""
    for path, command, _ in walk(parser):
        if path:
            command.epilog = (command.epilog + "\n\n" if command.epilog else "") + docs_epilog(path)
            command.formatter_class = _keeping_paths(command.formatter_class)


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
