"""Count the lines that declare an option: argparse `add_argument` calls, flow parameters, fields of
pydantic models (stage params, release config), and CLI-to-options copies (`key=args.key`).

    .venv/bin/python bench/option_declarations.py     # from the repository root

Lines, not statements: a call spread over three lines counts three, as a reader reads it.
"""
from __future__ import annotations

import ast
import pathlib
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
FOLDERS = ("xmdata", "runtime", "service", "flows", "tasks", "models", "schemas")


def _lines(node: ast.AST) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def pydantic_classes(trees: list[ast.Module]) -> set[str]:
    """Names of the classes that derive from BaseModel, directly or through one of ours."""
    names, grew = {"BaseModel"}, True
    while grew:
        before = len(names)
        names |= {node.name for tree in trees for node in ast.walk(tree) if isinstance(node, ast.ClassDef)
                  and any(getattr(b, "id", getattr(b, "attr", None)) in names for b in node.bases)}
        grew = len(names) > before
    return names


def count(tree: ast.Module, models: set[str]) -> dict[str, set[int]]:
    """Lines by kind; a declaration's first line stands for it (see main)."""
    found = {"add_argument": set(), "flow parameters": set(), "model fields": set(), "args copies": set()}
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            found["add_argument"] |= _lines(node)
        elif isinstance(node, ast.FunctionDef) and any(
                isinstance(d, ast.Call) and getattr(d.func, "id", None) == "flow" for d in node.decorator_list):
            for arg in node.args.args + node.args.kwonlyargs:
                found["flow parameters"].add(arg.lineno)
        elif isinstance(node, ast.ClassDef) and node.name in models:
            for statement in node.body:
                if isinstance(statement, ast.AnnAssign) and not isinstance(statement.target, ast.Attribute):
                    found["model fields"] |= _lines(statement)
        elif isinstance(node, ast.keyword) and isinstance(node.value, ast.Attribute) and \
                getattr(node.value.value, "id", None) == "args" and node.value.attr == node.arg:
            found["args copies"].add(node.value.lineno)
    return found


def main() -> int:
    root = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT  # another checkout, to compare
    paths = [p for folder in FOLDERS for p in sorted((root / folder).rglob("*.py"))]
    trees = [ast.parse(p.read_text(encoding="utf-8")) for p in paths]
    models, totals = pydantic_classes(trees), {}
    for tree in trees:
        for kind, lines in count(tree, models).items():
            totals[kind] = totals.get(kind, 0) + len(lines)
    print(f"{'lines':16} {'':5}")
    for kind, n in totals.items():
        print(f"{kind:16} {n:5}")
    print(f"{'total':16} {sum(totals.values()):5}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
