"""The documentation's reference pages, generated from the declarations (never retyped by hand).

    python -m xmdata.docs_reference [DIR]      writes DIR (default docs/reference)/*.md

Commands and options come from the parser `xmdata` itself builds (whose flags the params models
make), release-config sections from flows/release_config.py's models, tables from schemas/,
reject reasons from schemas/reasons.py, settings from runtime/settings.py. The site's build runs
this first (docs/hooks.py), and a test compares the committed pages with fresh ones.
"""
from __future__ import annotations

import argparse
import os
import sys
import typing

from xmdata.cli_command import CommandParser
from xmdata.cli_docs import COMMANDS_PAGE, GUIDES, HEADER, anchor, docs_epilog, subcommands, walk  # noqa: F401
from xmdata.docs_coverage import translator_coverage_page

DOCS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs")


def options(parser: CommandParser) -> list[argparse.Action]:
    return [a for a in parser.options if "-h" not in a.option_strings]


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _help(parser: argparse.ArgumentParser, action: argparse.Action) -> str:
    """The help as --help prints it: `%(default)g` and the like filled in, as argparse's formatter does."""
    if not action.help or action.help == argparse.SUPPRESS:
        return ""
    values = {k: getattr(v, "__name__", v) for k, v in {**vars(action), "prog": parser.prog}.items()
              if v is not argparse.SUPPRESS}
    if values.get("choices") is not None:
        values["choices"] = ", ".join(map(str, values["choices"]))
    return action.help % values


def _default(action: argparse.Action) -> str:
    if action.default in (None, argparse.SUPPRESS, False) or action.required or not action.option_strings:
        return ""
    return f"`{action.default}`"


def commands_page() -> str:
    from xmdata.cli_parser import build_parser
    from xmdata.exit_codes import markdown as exit_codes

    lines = ["# Commands", "", HEADER.strip(), "",
             "Every `xmdata` command and option, as `xmdata COMMAND --help` prints them. The flags of a "
             "stage come from its params model, so the same names, defaults and bounds hold in a "
             "release config and in the Prefect UI's forms ([release config](release-config.md)).", "",
             "## Exit status {#exit-status}", "", "Every command ends with one of these (`xmdata/exit_codes.py`):", "",
             exit_codes()]
    for path, parser, help_text in walk(build_parser()):
        level = "#" * min(2 + max(len(path) - 1, 0), 4)
        lines += [f"{level} xmdata {' '.join(path)} {{#{anchor(path)}}}".replace("xmdata  ", "xmdata "), ""]
        if help_text:
            lines += [help_text[0].upper() + help_text[1:] + ("" if help_text.endswith(".") else "."), ""]
        guide = GUIDES.get(path[0]) if len(path) == 1 else None
        if guide and os.path.exists(os.path.join(DOCS, guide)):
            lines += [f"Guide: [{guide}](../{guide}).", ""]
        usage = parser.format_usage().replace("usage: ", "").strip()
        lines += ["```text", " ".join(usage.split()), "```", ""]
        rows = options(parser)
        if rows:
            lines += ["| option | default | meaning |", "|---|---|---|"]
            for action in rows:
                names = ", ".join(action.option_strings) or action.metavar or action.dest
                choices = f" (one of {', '.join(map(str, action.choices))})" if action.choices else ""
                lines.append(f"| `{_cell(names)}` | {_cell(_default(action))} | {_cell(_help(parser, action) + choices)} |")
            lines.append("")
    return "\n".join(lines)


def _without_metadata(annotation):
    """Annotated[X, validators…] -> X, inside unions and lists too: a page names types, not validators
    (whose repr holds a memory address)."""
    if typing.get_origin(annotation) is typing.Annotated:
        return _without_metadata(typing.get_args(annotation)[0])
    args = typing.get_args(annotation)
    if args and typing.get_origin(annotation) in (typing.Union, list):
        inner = tuple(_without_metadata(a) for a in args)
        return typing.Union[inner] if typing.get_origin(annotation) is typing.Union else list[inner[0]]
    return annotation


def _type_name(annotation) -> str:
    annotation = _without_metadata(annotation)
    text = getattr(annotation, "__name__", None) if not typing.get_args(annotation) else None
    text = text or repr(annotation).replace("typing.", "")
    for prefix in ("xmdata.", "tasks.", "runtime.", "flows."):
        text = text.replace(prefix, "")
    return text.replace("NoneType", "None")


def _models_in(annotation) -> list:
    from pydantic import BaseModel

    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    found = []
    for arg in typing.get_args(annotation):
        found += [m for m in _models_in(arg) if m not in found]
    return found


def _field_default(field) -> str:
    from pydantic import BaseModel
    from pydantic_core import PydanticUndefined

    value = field.default_factory() if field.default_factory is not None else field.default
    if value is PydanticUndefined:
        return "required"
    if isinstance(value, BaseModel):
        return "its keys' defaults"
    return f"`{value!r}`"


def _field_rows(model, prefix: str, seen: set) -> list[str]:
    rows = []
    for name, field in model.model_fields.items():
        key = field.alias or name
        rows.append(f"| `{prefix}{key}` | {_cell(_type_name(field.annotation))} | {_cell(_field_default(field))} | "
                    f"{_cell(field.description or '')} |")
        for sub in _models_in(field.annotation):
            if sub not in seen:
                rows += _field_rows(sub, f"{prefix}{key}.", seen | {sub})
    return rows


def release_config_page() -> str:
    from xmdata.flows.release_config import ReleaseConfig

    lines = ["# Release config", "", HEADER.strip(), "",
             "The keys of a `release.yaml` (`xmdata release --config FILE`), from "
             "`flows/release_config.py`. A key not listed here is refused with every other error of the "
             "config before anything runs. Paths are relative to the config file; a model written "
             "`tiny:<backend>` is the offline tiny model of that backend.", ""]
    top = ["| key | type | default | meaning |", "|---|---|---|---|"]
    sections = []
    for name, field in ReleaseConfig.model_fields.items():
        top.append(f"| `{name}` | {_cell(_type_name(field.annotation))} | {_cell(_field_default(field))} | "
                   f"{_cell(field.description or '')} |")
        for model in _models_in(field.annotation):
            doc = (model.__doc__ or "").strip()
            sections += [f"## `{name}:` {{#{name.replace('_', '-')}}}", ""]
            if doc and not doc.startswith(("Usage docs", "!!!")):
                sections += [" ".join(doc.split()), ""]
            sections += ["| key | type | default | meaning |", "|---|---|---|---|",
                         *_field_rows(model, f"{name}.", {model}), ""]
    return "\n".join(lines + ["## Top-level keys", ""] + top + [""] + sections)


def tables_page() -> str:
    from xmdata.schemas.tables import CONTRACTS

    lines = ["# Tables", "", HEADER.strip(), "",
             "Every table xmdata reads or writes, with its columns, from `schemas/`. Required columns must be "
             "present in an input; the others are kept when present. `xmdata validate FILE --table NAME` "
             "checks a file against one.", ""]
    for name, contract in sorted(CONTRACTS.items()):
        lines += [f"## {name} {{#{name.replace('_', '-')}}}", ""]
        if contract.description:
            lines += [contract.description, ""]
        lines += [f"Row id: `{contract.id_column}`.", "", "| column | type | required |", "|---|---|---|"]
        lines += [f"| `{f.name}` | `{f.type}` | {'yes' if f.name in contract.required else ''} |"
                  for f in contract.schema]
        lines.append("")
    from xmdata.schemas import images

    lines += ["## download-images output {#download-images}", "",
              "`xmdata download-images` keeps every input column and adds these; `status` is `ok` or the reason "
              f"there is no image. Transient reasons (`--retry-failed` fetches those again): "
              f"{', '.join(f'`{r}`' for r in sorted(images.TRANSIENT))}.", "",
              "| column | type |", "|---|---|"]
    lines += [f"| `{f.name}` | `{f.type}` |" for f in images.DOWNLOAD_FIELDS] + [""]
    return "\n".join(lines)


def reasons_page() -> str:
    from xmdata.schemas.reasons import REASONS

    lines = ["# Reject reasons", "", HEADER.strip(), "",
             "A row a stage refuses is never dropped silently: it goes to the stage's rejects table "
             "(`stage`, `reason`, `row_id`, `value`: [tables](tables.md#rejects)) with one of these reasons, "
             "from the one registry `schemas/reasons.py` (a stage cannot write a reason that is not in it). "
             "`import_*` is every importer's stage. `xmdata explain RELEASE ROW_ID` shows a row's reasons; "
             "a release's `explore` page groups them.", "",
             "| reason | stages | meaning | what to do |", "|---|---|---|---|"]
    for name, reason in sorted(REASONS.items()):
        stages = ", ".join(f"`{s}`" for s in reason.stages)
        lines.append(f"| <a id=\"{name}\"></a>`{name}` | {stages} | {_cell(reason.meaning)} | {_cell(reason.action)} |")
    return "\n".join(lines) + "\n"


def settings_page() -> str:
    from xmdata.runtime import settings
    from xmdata.service import warm_cold

    return "\n".join(["# Settings", "", HEADER.strip(), "",
                      "Every environment variable xmdata reads, declared once with its default and meaning in "
                      "`runtime/settings.py`; `xmdata --help` lists xmdata's own. No other module reads the "
                      "environment, and none sets it to pass state inside a process (the run's `--map` and "
                      "`--storage-option` are context variables). A value a variable cannot take is refused in "
                      "one line, exit 2.", "",
                      settings.markdown(), warm_cold.markdown()])


def importers_page() -> str:
    import importlib

    from xmdata.tasks.importers.base import Published
    from xmdata.tasks.importers.formats import FORMATS

    lines = ["# Import formats", "", HEADER.strip(), "",
             "Every `xmdata import FORMAT` (`tasks/importers/formats.py`), what it reads, and the publisher's "
             "own counts each import is compared with (its report lists every difference). How to get each "
             "source and what it was verified against: [import public datasets](../how-to/importers.md).", ""]
    for name, (where, help_text) in FORMATS.items():
        module = importlib.import_module(f"xmdata.tasks.importers.{where.partition(':')[0]}")
        lines += [f"## {name} {{#{name}}}", "", help_text[0].upper() + help_text[1:] + ".", "",
                  f"Adapter: `tasks/importers/{where.partition(':')[0]}.py` (`{where.partition(':')[2]}`).", ""]
        for constant, published in ((k, v) for k, v in vars(module).items() if isinstance(v, Published)):
            lines += [f"Publisher's counts (`{constant}`), from {published.source}:", "", "| count | publisher |", "|---|---:|"]
            lines += [f"| `{k}` | {v:,} |" for k, v in published.counts.items()] + [""]
    return "\n".join(lines)


PAGES = {"commands.md": commands_page, "importers.md": importers_page, "release-config.md": release_config_page, "tables.md": tables_page,
         "reasons.md": reasons_page, "settings.md": settings_page, "translator-coverage.md": translator_coverage_page}


def generate() -> dict[str, str]:
    return {name: page() for name, page in PAGES.items()}


def write(folder: str) -> list[str]:
    """Write the pages whose text changed; the names written."""
    os.makedirs(folder, exist_ok=True)
    written = []
    for name, text in generate().items():
        path = os.path.join(folder, name)
        if not os.path.exists(path) or open(path, encoding="utf-8").read() != text:
            with open(path, "w", encoding="utf-8") as out:
                out.write(text)
            written.append(name)
    return written


if __name__ == "__main__":
    target = sys.argv[1] if len(sys.argv) > 1 else os.path.join("docs", "reference")
    for name in write(target):
        print(os.path.join(target, name))


def on_pre_build(config) -> None:
    """MkDocs hook (mkdocs.yml `hooks:`): every build writes the reference pages first, so the site
    can never show a stale reference; unchanged pages are not rewritten (`mkdocs serve` watches them)."""
    write(os.path.join(config["docs_dir"], "reference"))


def home_page(readme: str) -> str:
    """The site's home page: the README, its links into docs/ made relative to the site."""
    return readme.replace("[`docs/`](docs/)", "`docs/`").replace("](docs/", "](")


def on_files(files, config):
    """MkDocs hook: the home page (index.md) is the README itself, never a second copy in docs/."""
    from mkdocs.structure.files import File

    root = os.path.dirname(os.path.abspath(config["config_file_path"]))
    readme = open(os.path.join(root, "README.md"), encoding="utf-8").read()
    files.append(File.generated(config, "index.md", content=home_page(readme)))
    return files
