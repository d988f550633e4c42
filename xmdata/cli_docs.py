"""Where each command is documented, for its --help: its reference section and its guide under docs/.
argparse only (imported by the command line to build --help, and by docs_reference.py to write
the reference from the same parser)."""
from __future__ import annotations

import argparse

COMMANDS_PAGE = "docs/reference/commands.md"
# Each command's guide under docs/ (how to use it, with its figures); the reference page links it and
# `xmdata COMMAND --help` names it.
GUIDES = {
    "demo": "how-to/releases.md", "release": "how-to/releases.md", "up": "how-to/service.md",
    "down": "how-to/service.md", "status": "how-to/service.md", "worker": "how-to/clusters.md",
    "serve": "how-to/scheduled-builds.md", "identify-language": "how-to/commands.md",
    "select-images": "how-to/select-images.md", "score": "how-to/score.md", "translate": "how-to/translate.md",
    "select-translations": "how-to/translate.md", "translate-qa": "how-to/translate-qa.md",
    "download-images": "how-to/download-images.md", "dedup": "how-to/clean.md", "contamination": "how-to/clean.md",
    "explain": "how-to/explain.md", "explore": "how-to/releases.md", "train": "how-to/train.md",
    "validate": "how-to/commands.md", "models": "explanation/installing.md", "evaluate": "how-to/evaluate.md",
    "import": "how-to/importers.md", "unlock": "how-to/releases.md",
}


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


def subcommands(parser: argparse.ArgumentParser) -> dict[str, tuple[argparse.ArgumentParser, str]]:
    """{name: (parser, its one-line help)} of PARSER's subcommands, in the order they were added."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            return {name: (p, helps.get(name, "")) for name, p in action.choices.items()}
    return {}


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """(path, parser, help) for PARSER and every subcommand below it, depth first."""
    yield path, parser, parser.description or ""
    for name, (child, help_text) in subcommands(parser).items():
        for item in walk(child, (*path, name)):
            yield item if item[0] != (*path, name) else (item[0], item[1], help_text)
