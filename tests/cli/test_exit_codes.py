"""Exit statuses declared once (xmdata/exit_codes.py): every status the command line's code returns or
exits with is in the table, and the commands reference prints that table."""
import ast
import os

from xmdata.exit_codes import EXIT_CODES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Modules outside xmdata/ that hold a command's runner or are its process (the `xmdata` entry point
# among them): what they return is a command's status.
RUNTIME_RUNNERS = ("service/service_status.py", "runtime/worker_command.py", "service/command_server.py",
                   "service/client.py")


def statuses(tree: ast.AST) -> dict[int, int]:
    """{status: line} of every integer literal returned, or passed to exit / _exit / parser.exit."""
    found = {}
    for node in ast.walk(tree):
        values = []
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value.body, node.value.orelse] if isinstance(node.value, ast.IfExp) else [node.value]
        elif (isinstance(node, ast.Call) and node.args
              and getattr(node.func, "attr", getattr(node.func, "id", None)) in ("exit", "_exit")):
            values = [node.args[0]]
        found.update({v.value: node.lineno for v in values if isinstance(v, ast.Constant) and type(v.value) is int})
    return found


def command_line_files():
    for folder, dirs, names in os.walk(os.path.join(ROOT, "xmdata")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        yield from (os.path.relpath(os.path.join(folder, n), ROOT) for n in names if n.endswith(".py"))
    yield from RUNTIME_RUNNERS


def test_every_status_the_code_gives_is_declared():
    found = {}
    for rel in command_line_files():
        tree = ast.parse(open(os.path.join(ROOT, rel), encoding="utf-8").read())
        found.update({status: f"{rel}:{line}" for status, line in statuses(tree).items()})
    assert {status: where for status, where in found.items() if status not in EXIT_CODES} == {}
    assert 3 in found  # `status`, service not running: the literal the runtime returns (it cannot import the CLI)


def test_the_check_finds_each_form():
    planted = "def run(a):\n    if a:\n        return 4\n    parser.exit(5, 'x')\n    sys.exit(6)\n    return 7 if a else 0\n"
    assert statuses(ast.parse(planted)) == {4: 3, 5: 4, 6: 5, 7: 6, 0: 6}


def test_the_reference_prints_the_table():
    from xmdata.docs_reference import commands_page

    page = commands_page()
    assert "## Exit status" in page
    for status, meaning in EXIT_CODES.items():
        assert f"| {status} | {meaning} |" in page
    assert set(EXIT_CODES) >= {0, 1, 2, 130, 141}
