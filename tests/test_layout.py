"""One rule from import path to file: `xmdata.X.…` is the top-level folder `X/` (the command-line
modules are `xmdata/`), every package folder is installed, CLI code stays under `xmdata/`, and no
module imports itself back through another (lazy imports inside functions included)."""
import ast
import importlib.util
import os
import tomllib

import networkx as nx

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The service's own process (`python -m xmdata.runtime.service_main`, started by `xmdata up`), not a
# user command: its two flags come from ensure_service.
PROCESS_ENTRY_POINTS = {os.path.join("runtime", "service_main.py")}
FOLDERS = ("xmdata", "runtime", "flows", "tasks", "schemas", "models", "data")


def module_files() -> dict[str, str]:
    """{module: path relative to the checkout}, by the rule alone."""
    found = {}
    for top in FOLDERS:
        for folder, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if os.path.exists(os.path.join(folder, d, "__init__.py"))]  # scripts stay out
            for name in names:
                if name.endswith(".py"):
                    rel = os.path.relpath(os.path.join(folder, name), ROOT)
                    parts = rel[:-3].split(os.sep)
                    parts = parts[:-1] if parts[-1] == "__init__" else parts
                    found[".".join(parts if parts[0] == "xmdata" else ["xmdata", *parts])] = rel
    return found


def test_every_module_is_where_the_rule_puts_it_and_every_package_is_installed():
    files = module_files()
    for module, rel in files.items():
        assert os.path.realpath(importlib.util.find_spec(module).origin) == os.path.join(ROOT, rel), module
    packages = {m for m, rel in files.items() if rel.endswith("__init__.py")}
    setuptools = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["tool"]["setuptools"]
    assert set(setuptools["packages"]) == packages
    assert setuptools["package-dir"] == {"xmdata": "xmdata", **{f"xmdata.{t}": t for t in FOLDERS[1:]}}


def imports_of(module: str, rel: str) -> set[str]:
    tree = ast.parse(open(os.path.join(ROOT, rel), encoding="utf-8").read())
    package = module if rel.endswith("__init__.py") else module.rsplit(".", 1)[0]
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(parts + ([node.module] if node.module else []))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return names


def test_no_import_cycles_and_no_argparse_outside_the_cli():
    files = module_files()
    graph = nx.DiGraph()
    for module, rel in files.items():
        imported = imports_of(module, rel)
        graph.add_edges_from((module, other) for other in imported if other in files and other != module)
        if not rel.startswith("xmdata" + os.sep) and rel not in PROCESS_ENTRY_POINTS:
            assert "argparse" not in imported, f"{rel}: command-line code belongs in xmdata/"
    assert list(nx.simple_cycles(graph)) == []
