"""The code's size, counted by the documentation site's build: architecture.md holds CODE_SIZE where
the figures go, and this MkDocs hook (mkdocs.yml `hooks:`) puts there the lines and files of each
top-level folder of code, of the whole tree and the files over LONG_FILE_LINES lines. A figure of
every commit: never typed by hand, never committed, never stale.

    python -m xmdata.docs_code_size      prints the same table
"""
from __future__ import annotations

import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CODE_SIZE = "<!-- code size: counted by the docs build (xmdata/docs_code_size.py) -->"
# Top-level folders of Python code, each with what it is: the layers of architecture.md, top first, then
# the benchmarks and the tests. "The whole tree" is all but the tests.
CODE_FOLDERS = {"xmdata": "the command line", "service": "the resident service", "flows": "the flows",
                "tasks": "the stages' logic", "runtime": "the engine", "models": "the model backends",
                "schemas": "the table contracts", "data": "the shipped tables' readers",
                "bench": "the benchmarks", "tests": "the tests"}
LONG_FILE_LINES = 300  # a file a reader can hold in mind


def python_files(root: str, folder: str) -> list[str]:
    """The .py files under ROOT/FOLDER (no __pycache__), relative to ROOT, sorted."""
    found = []
    for where, dirs, names in os.walk(os.path.join(root, folder)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        found += [os.path.relpath(os.path.join(where, n), root) for n in sorted(names) if n.endswith(".py")]
    return found


def lines(path: str) -> int:
    """As `wc -l` counts them: newlines."""
    with open(path, "rb") as f:
        return f.read().count(b"\n")


def counted(root: str = ROOT) -> dict[str, dict[str, int]]:
    """{folder: {file: lines}} of every folder of CODE_FOLDERS."""
    return {folder: {rel: lines(os.path.join(root, rel)) for rel in python_files(root, folder)} for folder in CODE_FOLDERS}


def code_size(root: str = ROOT) -> str:
    """The markdown architecture.md shows: a table of the folders and the whole tree, then the long files."""
    folders = counted(root)
    tree = {rel: n for folder, files in folders.items() if folder != "tests" for rel, n in files.items()}
    rows = ["| folder | what | lines | files |", "|---|---|---:|---:|"]
    rows += [f"| `{folder}/` | {CODE_FOLDERS[folder]} | {sum(files.values()):,} | {len(files):,} |"
             for folder, files in folders.items()]
    rows += [f"| the whole tree | every folder above but `tests/` | {sum(tree.values()):,} | {len(tree):,} |", ""]
    long = sorted(((n, rel) for rel, n in tree.items() if n > LONG_FILE_LINES), reverse=True)
    rows.append(f"Files over {LONG_FILE_LINES} lines, the tests aside: "
                + (", ".join(f"`{rel}` ({n:,})" for n, rel in long) if long else "none") + ".")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page, config, files) -> str:
    """MkDocs hook: the code's size, counted now, where a page holds CODE_SIZE."""
    if CODE_SIZE not in markdown:
        return markdown
    return markdown.replace(CODE_SIZE, code_size(os.path.dirname(os.path.abspath(config["config_file_path"]))))


if __name__ == "__main__":
    print(code_size(), end="")
