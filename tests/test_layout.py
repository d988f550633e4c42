"""One rule from import path to file: `xmdata.X.…` is the top-level folder `X/` (the command-line
modules are `xmdata/`), every package folder is installed, CLI code stays under `xmdata/` and no
package imports it (nor a layer above its own), by `import` or by name (a string importlib imports), no
module imports itself back through another (lazy imports inside functions included), and every module
named in a string (imported by name) exists. Only runtime/settings.py reads the environment, no module
keeps state that a function assigns, no code uses another library's private names, and no file of the
code is over 300 lines."""
import ast
import importlib.util
import os
import re
import tomllib

import networkx as nx
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The service's own process (`python -m xmdata.service.service_main`, started by `xmdata up`), not a
# user command: its two flags come from ensure_service.
PROCESS_ENTRY_POINTS = {os.path.join("service", "service_main.py"), os.path.join("service", "command_server.py")}
FOLDERS = ("xmdata", "runtime", "service", "flows", "tasks", "schemas", "models", "data")


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


def imports_of(module: str, rel: str, by_name: bool = False) -> set[str]:
    """What MODULE imports; `by_name`: with the modules it imports by name (named_in_strings)."""
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
    return names | (named_in_strings(tree) if by_name else set())


IMPORTERS_BY_NAME = ("import_module", "__import__")


def named_in_strings(tree: ast.AST) -> set[str]:
    """Modules a module imports by name: in a module that calls importlib.import_module (or
    __import__), its "xmdata.x.y" and "xmdata.x.y:function" strings (its tables, the command process's
    warm list) — not a `python -m` target (another process), a logger's name or NOT_MODULES."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)]
    if not any(getattr(c.func, "attr", getattr(c.func, "id", None)) in IMPORTERS_BY_NAME for c in calls):
        return set()
    skipped = {id(c.args[0]) for c in calls if c.args
               and getattr(c.func, "attr", getattr(c.func, "id", "")) in ("getLogger", "get_logger")}
    for node in ast.walk(tree):
        if isinstance(node, (ast.List, ast.Tuple)):
            skipped |= {id(after) for before, after in zip(node.elts, node.elts[1:])
                        if isinstance(before, ast.Constant) and before.value == "-m"}
    return {node.value.partition(":")[0] for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.match(node.value)
            and id(node) not in skipped and node.value not in NOT_MODULES}


def test_no_import_cycles_and_no_argparse_outside_the_cli():
    files = module_files()
    graph = nx.DiGraph()
    for module, rel in files.items():
        imported = imports_of(module, rel)
        graph.add_edges_from((module, other) for other in imported if other in files and other != module)
        if not rel.startswith("xmdata" + os.sep) and rel not in PROCESS_ENTRY_POINTS:
            assert "argparse" not in imported, f"{rel}: command-line code belongs in xmdata/"
    assert list(nx.simple_cycles(graph)) == []


# Layers, lowest first: a module imports only its own layer and those below (flows are recipes over
# tasks; a stage's params model lives with its task, so tasks never reach up into flows). The
# contracts, the runtime and the models are one layer: readers and models read through runtime
# storage, workers hold models. The resident service (`xmdata up`, its warm command process, the
# `xmdata` entry point) sits above the flows it warms: the engine runs without it, handed its target
# by the caller (runtime/session.py: execution_session; a deployment run finds it by an entry point).
LAYERS = {"data": 0, "schemas": 1, "runtime": 1, "models": 1, "tasks": 2, "flows": 3, "service": 4}


def test_no_module_imports_a_layer_above_its_own():
    files = module_files()
    layer = lambda module: LAYERS.get(module.split(".")[1]) if module.count(".") else None
    for module, rel in files.items():
        own = layer(module)
        if own is None or rel in CLI_IMPORTERS:  # the command's warm process: it imports what a command does
            continue
        above = sorted(o for o in imports_of(module, rel, by_name=True) if o in files and (layer(o) or 0) > own)
        assert above == [], f"{rel} imports {above}, a layer above its own"


# The command line (xmdata/'s modules but the package root, which holds __version__) sits above every
# layer: a flow, a worker or a deployment runs without it. Listed: who imports it all the same, and why.
CLI_IMPORTERS = {os.path.join("service", "command_server.py"): "the service's warm copy of the command: its "
                 "forked children run xmdata.cli.main",
                 os.path.join("service", "warm_imports.py"): "what that warm copy imports before it serves: "
                 "the command line and every flow, once, for every fork",
                 os.path.join("service", "client.py"): "the `xmdata` entry point: a command it cannot hand to the "
                 "warm command process runs here (xmdata.cli.main), its exit status from xmdata.exit_codes"}


def test_no_package_imports_the_command_line():
    files = module_files()
    cli = {m for m, rel in files.items() if rel.split(os.sep)[0] == "xmdata" and m != "xmdata"}
    found = {rel: sorted(imports_of(m, rel, by_name=True) & cli) for m, rel in files.items()
             if rel.split(os.sep)[0] != "xmdata" and rel not in CLI_IMPORTERS}
    assert {rel: names for rel, names in found.items() if names} == {}
    assert {rel for rel in CLI_IMPORTERS if imports_of(rel[:-3].replace(os.sep, "."), rel, by_name=True) & cli} == set(CLI_IMPORTERS)


def test_imports_by_name_count_as_imports():
    """A module named in a string that importlib imports is an import for the layer and CLI rules: the
    runtime importing "xmdata.cli" by name imports the command line as much as `import xmdata.cli` does."""
    planted = ('import importlib\nWARM = ("xmdata.cli", "xmdata.flows.release:release_flow")\n'
               'CMD = ["python", "-m", "xmdata.service.service_main"]\nlog = getLogger("xmdata.runtime.x")\n'
               'for name in WARM:\n    importlib.import_module(name)\n')
    assert named_in_strings(ast.parse(planted)) == {"xmdata.cli", "xmdata.flows.release"}
    assert named_in_strings(ast.parse(planted.replace("importlib.import_module(name)", "print(name)"))) == set()


# Strings that read like a module's name and are not one: they need not resolve.
NOT_MODULES = {"xmdata.shard_rows": "a Parquet metadata key (runtime/parquet_shards.py)",
               "xmdata.warm_cluster": "an entry-point group (runtime/session.py, pyproject.toml)"}
NAME = re.compile(r"^xmdata(\.\w+)+(:\w+)?$")


def defines(rel: str, name: str) -> bool:
    """Whether module file REL binds NAME at its top level (a def, class, assignment or import)."""
    tree = ast.parse(open(os.path.join(ROOT, rel), encoding="utf-8").read())
    for node in tree.body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else getattr(node, "targets", [])
        bound = {getattr(node, "name", None)} | {t.id for t in targets if isinstance(t, ast.Name)}
        bound |= {(a.asname or a.name).split(".")[0] for a in getattr(node, "names", []) if isinstance(a, ast.alias)}
        if name in bound:
            return True
    return False


def names_imported_by_name() -> dict[str, str]:
    """{name: where}: every "xmdata.x.y" or "xmdata.x.y:function" string of the code (importlib.import_module's
    tables, `python -m` targets), but a logger's name, and the entry points of pyproject.toml and prefect.yaml."""
    found = {}
    for module, rel in module_files().items():
        tree = ast.parse(open(os.path.join(ROOT, rel), encoding="utf-8").read())
        loggers = {id(node.args[0]) for node in ast.walk(tree) if isinstance(node, ast.Call) and node.args
                   and getattr(node.func, "attr", getattr(node.func, "id", "")) in ("getLogger", "get_logger")}
        found.update({node.value: f"{rel}:{node.lineno}" for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and isinstance(node.value, str) and NAME.match(node.value)
                      and id(node) not in loggers and node.value not in NOT_MODULES})
    project = tomllib.load(open(os.path.join(ROOT, "pyproject.toml"), "rb"))["project"]
    for name, target in project["scripts"].items():
        found[target] = f"pyproject.toml [project.scripts] {name}"
    for group, points in project["entry-points"].items():
        found.update({target: f"pyproject.toml [project.entry-points.{group!r}] {name}" for name, target in points.items()})
    for deployment in yaml.safe_load(open(os.path.join(ROOT, "prefect.yaml"), encoding="utf-8"))["deployments"]:
        module, _, function = deployment["entrypoint"].rpartition(".")
        found[f"{module}:{function}"] = f"prefect.yaml {deployment['name']}"
    return found


def unresolved(names: dict[str, str]) -> list[str]:
    files = module_files()
    missing = []
    for name, where in names.items():
        module, _, attribute = name.partition(":")
        if module not in files or (attribute and not defines(files[module], attribute)):
            missing.append(f"{where}: {name}")
    return missing


def test_imports_made_by_name_resolve():
    """A module renamed or a function moved breaks a "module:function" table or a `python -m` only when
    that name is used, at run time, in a worker or the service: here it breaks now."""
    from xmdata.tasks.importers.formats import FORMATS  # names relative to its package

    names = names_imported_by_name()
    names.update({f"xmdata.tasks.importers.{entry}": f"FORMATS[{fmt!r}]" for fmt, (entry, _) in FORMATS.items()})
    assert {"xmdata.cli", "xmdata.models.embedders:HfEmbedder", "xmdata.service.client:main",
            "xmdata.service.run_setup:warm_cluster"} <= set(names)
    assert unresolved(names) == []
    planted = {"xmdata.cli_evaluate": "a module gone", "xmdata.models.embedders:NoSuchEmbedder": "a class gone",
               "xmdata.cli:main": "there", "xmdata.commands": "a package"}
    assert unresolved(planted) == ["a module gone: xmdata.cli_evaluate", "a class gone: xmdata.models.embedders:NoSuchEmbedder"]


PACKAGES = ("xmdata", "runtime", "service", "flows", "tasks", "models", "schemas")
SETTINGS = os.path.join("runtime", "settings.py")
# Writes for the libraries of this process (Prefect's and Dask's logging and API settings, BLAS
# threads), the returned value unused: they set the environment, they do not read it.
ENV_WRITES = {"update", "pop", "setdefault"}
# Module-level state a function assigns, each with its reason; none is shared by the CLI and a flow.
GLOBAL_STATE = {
    ("runtime/session.py", "_default"): "a flow run outside any command (a deployment) makes its "
                                        "execution session once per process; a command opens its own",
}


def package_sources():
    for rel in module_files().values():
        if rel.split(os.sep)[0] in PACKAGES:
            yield rel, ast.parse(open(os.path.join(ROOT, rel), encoding="utf-8").read())


def environment_reads(tree: ast.AST) -> list[int]:
    """Lines that read the environment: os.getenv, `environ` imported, or os.environ used in any way
    but `os.environ[k] = v`, `del os.environ[k]` or a statement `os.environ.update/pop/setdefault(…)`."""
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "os":
            lines += [node.lineno for a in node.names if a.name in ("environ", "getenv", "environb")]
        if isinstance(node, ast.Attribute) and node.attr == "getenv":
            lines.append(node.lineno)
        if not (isinstance(node, ast.Attribute) and node.attr in ("environ", "environb")):
            continue
        up = parents[node]
        if isinstance(up, ast.Subscript) and isinstance(up.ctx, (ast.Store, ast.Del)):
            continue
        if (isinstance(up, ast.Attribute) and up.attr in ENV_WRITES and isinstance(parents[up], ast.Call)
                and isinstance(parents[parents[up]], ast.Expr)):
            continue
        lines.append(node.lineno)
    return lines


def test_only_the_settings_module_reads_the_environment():
    reads = {rel: lines for rel, tree in package_sources() if rel != SETTINGS and (lines := environment_reads(tree))}
    assert reads == {}, "read it through runtime/settings.py (a child's env: settings.child_env)"


def test_the_environment_check_tells_reads_from_writes():
    source = """
import os
from os import environ
os.environ["A"] = "1"
os.environ.update(B="2")
os.environ.setdefault("C", "3")
del os.environ["A"]
a = os.environ.get("A")
b = os.environ["B"]
c = os.environ.setdefault("C", "3")
env = {**os.environ, "D": "4"}
d = os.getenv("D")
e = "E" in os.environ
"""
    assert sorted(environment_reads(ast.parse(source))) == [3, 8, 9, 10, 11, 12, 13]


def test_no_module_level_state_assigned_from_functions():
    """A `global` statement is state one call leaves for another (the CLI for the flow, a test for
    the next): pass it in arguments, a context variable or an object. GLOBAL_STATE lists the exceptions."""
    found = {(rel, name) for rel, tree in package_sources() for node in ast.walk(tree)
             if isinstance(node, ast.Global) for name in node.names}
    assert found == set(GLOBAL_STATE)


EMPTY_MAKERS = ("set", "dict", "list", "OrderedDict", "defaultdict", "deque")


def empty_module_collections(tree: ast.Module) -> list[int]:
    """Lines of module-level names bound to an empty collection (`_seen = set()`, `_cache = {}`):
    one is there to be filled at run time (a declared table, `{"a": 1}` or `dict(a=1)`, is not)."""
    lines = []
    for node in tree.body:
        value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
        func = getattr(value, "func", None)
        name = getattr(func, "id", None) or getattr(func, "attr", "")
        if ((isinstance(value, (ast.List, ast.Set)) and not value.elts)
                or (isinstance(value, ast.Dict) and not value.keys)
                or (isinstance(value, ast.Call) and name in EMPTY_MAKERS and not value.keywords
                    and (not value.args or name == "defaultdict"))):
            lines.append(node.lineno)
    return lines


def test_no_module_level_collection_filled_at_run_time():
    """The same state as a `global` statement, without the statement."""
    found = {rel: lines for rel, tree in package_sources() if (lines := empty_module_collections(tree))}
    assert found == {}
    sample = "_used: set[str] = set()\nA = {}\nB = dict(a=1)\nC = defaultdict(list)\nD = [1]\nE = deque()\n"
    assert empty_module_collections(ast.parse(sample)) == [1, 2, 4, 6]


def test_tests_mirror_the_code_folders_and_their_helpers_live_in_support():
    """tests/<folder>/ is a capability of tasks/ or a top-level package (runtime, models, schemas, the
    CLI, the UI, the documentation site); only the repository-wide rules sit at the top; what tests build is in tests/support/."""
    tests = os.path.join(ROOT, "tests")
    capabilities = {d for d in os.listdir(os.path.join(ROOT, "tasks")) if os.path.isdir(os.path.join(ROOT, "tasks", d))}
    allowed = capabilities | {"runtime", "service", "models", "schemas", "cli", "ui", "docs", "support"}
    folders = {d for d in os.listdir(tests) if os.path.isdir(os.path.join(tests, d)) and d != "__pycache__"}
    assert folders <= allowed, folders - allowed
    top = {f for f in os.listdir(tests) if f.endswith(".py")}
    assert top == {"conftest.py", "test_layout.py"}, top
    for folder in folders - {"support"}:
        names = [f for f in os.listdir(os.path.join(tests, folder)) if f.endswith(".py")]
        assert all(f.startswith("test_") for f in names), (folder, names)  # helpers go to support/


def test_what_users_read_names_its_sources_never_an_internal_issue():
    """Reports, cards and messages say where a figure comes from (a file, a commit), not an issue number."""
    import re

    found = [f"{rel}:{n}" for rel in module_files().values()
             for n, line in enumerate(open(os.path.join(ROOT, rel), encoding="utf-8").read().splitlines(), 1)
             if re.search(r"\bissues? #?\d+", line, re.IGNORECASE)]
    assert not found, found


# Other libraries' public names only: a private one (`_x`) of CPython, Dask, Prefect… breaks on their next
# release. The project's own modules are ours to reach into; these underscore names are a library's
# documented API.
PROJECT_ROOTS = {"xmdata", "bench", "tests", "support"}
PUBLIC_UNDERSCORE = {"_exit": "os._exit: documented, a forked child's exit without the parent's cleanup",
                     "_replace": "a namedtuple's documented copy with fields changed"}
ACCESSORS = ("getattr", "hasattr", "setattr", "delattr")


def private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def checked_sources():
    """Every Python file of the project: the packages, the tests, the benchmarks."""
    for top in (*FOLDERS, "tests", "bench"):
        for folder, dirs, names in os.walk(os.path.join(ROOT, top)):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in sorted(n for n in names if n.endswith(".py")):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, ROOT), ast.parse(open(path, encoding="utf-8").read())


def defined_private_names(trees) -> set[str]:
    """Every private name the project itself defines: functions, classes, assigned names and attributes."""
    found = set()
    for tree in trees:
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                found.add(node.attr)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
    return {name for name in found if private(name)}


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Call, ast.Subscript)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


def bindings(tree: ast.Module):
    """(target, value) of every assignment, `with … as`, `for … in` and `:=`."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign):
            yield from ((target, node.value) for target in node.targets)
        elif isinstance(node, (ast.AnnAssign, ast.NamedExpr)) and node.value is not None:
            yield node.target, node.value
        elif isinstance(node, ast.withitem) and node.optional_vars is not None:
            yield node.optional_vars, node.context_expr
        elif isinstance(node, (ast.For, ast.AsyncFor, ast.comprehension)):
            yield node.target, node.iter


def names_bound(target: ast.AST) -> set[str]:
    """The plain names an assignment target binds (`a`, `a, *b`), not an attribute or item it sets."""
    if isinstance(target, ast.Name):
        return {target.id}
    if isinstance(target, (ast.Tuple, ast.List)):
        return set().union(*(names_bound(t) for t in target.elts))
    return names_bound(target.value) if isinstance(target, ast.Starred) else set()


def private_uses(tree: ast.Module, ours: set[str]) -> list[int]:
    """Lines that use another library's private name: `from X import _y` (or a private module),
    `X._y` and getattr(X, "_y") where X is an imported outside module or an object made from one,
    or an object of unknown origin (an argument) and `_y` is no name the project defines (`ours`)."""
    outside, project, lines = set(), {"self", "cls"}, []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                bound = alias.asname or alias.name.split(".")[0]
                (project if alias.name.split(".")[0] in PROJECT_ROOTS else outside).add(bound)
                if any(private(part) for part in alias.name.split(".")):
                    lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom):
            ours_too = node.level > 0 or (node.module or "").split(".")[0] in PROJECT_ROOTS
            (project if ours_too else outside).update(alias.asname or alias.name for alias in node.names)
            if not ours_too and (any(private(part) for part in node.module.split("."))
                                 or any(private(alias.name) for alias in node.names)):
                lines.append(node.lineno)
    assignments = list(bindings(tree))
    for _ in range(3):  # names made from what an outside module returned are outside objects too
        for target, value in assignments:
            root = _root(value)
            if isinstance(root, ast.Name) and root.id in outside:
                outside.update(names_bound(target))
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr) and node.attr not in PUBLIC_UNDERSCORE:
            name, accessed = _root(node.value), node.attr
        elif (isinstance(node, ast.Call) and getattr(node.func, "id", None) in ACCESSORS and len(node.args) > 1
              and isinstance(node.args[1], ast.Constant) and isinstance(node.args[1].value, str)
              and private(node.args[1].value)):
            name, accessed = _root(node.args[0]), node.args[1].value
        else:
            continue
        known = getattr(name, "id", None)
        if known in outside or (known not in project and accessed not in ours):
            lines.append(node.lineno)
    return sorted(set(lines))


def test_no_private_name_of_another_library():
    sources = dict(checked_sources())
    ours = defined_private_names(sources.values())
    found = {rel: lines for rel, tree in sources.items() if (lines := private_uses(tree, ours))}
    assert found == {}, "another library's private name: find its public route (docs/explanation/architecture.md)"


def test_the_private_name_check_finds_each_form():
    planted = """
import os
import multiprocessing.forkserver
import polars._utils
from distributed.nanny import _get_env_variables
from pyarrow._fs import FileSystem
from distributed import LocalCluster
from xmdata.runtime import worker_start
from .settings import _flag
pid = multiprocessing.forkserver._forkserver._forkserver_pid
cluster = LocalCluster()
cluster.sync(cluster._correct_state)
getattr(cluster, "_correct_state")
def scale(given):
    given._correct_state()
    given._ours()
    self._ours, os._exit(0), cluster.__class__, worker_start._in_step, worker_start.__name__
"""
    assert private_uses(ast.parse(planted), {"_ours"}) == [4, 5, 6, 10, 12, 13, 15]


def test_no_file_of_the_code_is_longer_than_a_reader_can_hold_in_mind():
    """Every file of every code folder (the tests aside) at most LONG_FILE_LINES lines,
    as architecture.md's generated table says; a file grown past it is split by role."""
    from xmdata.docs_code_size import CODE_FOLDERS, LONG_FILE_LINES, counted

    code = {folder: files for folder, files in counted(ROOT).items() if folder != "tests"}
    assert set(code) >= set(FOLDERS)
    assert {rel: n for files in code.values() for rel, n in files.items() if n > LONG_FILE_LINES} == {}
    assert "tests" in CODE_FOLDERS and sum(len(files) for files in code.values()) > 300
