import os
import subprocess
import sys

import pytest

from xmdata.cli import main
from xmdata.data import sample_path

XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")


def test_help_is_light():
    heavy = ("torch", "prefect", "dask", "transformers", "polars", "pyarrow", "numpy", "PIL")
    code = "import sys; from xmdata.cli_parser import build_parser; build_parser().format_help(); " \
           f"print(sorted(m for m in {heavy!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    assert subprocess.run([XMDATA, "--help"], capture_output=True).returncode == 0


def test_broken_input_exits_2_names_file_column_rows_and_writes_nothing(tmp_path, capsys):
    bad = tmp_path / "captions.csv"
    bad.write_text("id,caption\na,hello\n")
    out = tmp_path / "out"
    assert main(["identify-language", str(bad), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "captions.csv" in err and "'text'" in err and "required column is missing" in err
    assert not out.exists()


def test_missing_file_exits_2(tmp_path, capsys):
    assert main(["validate", str(tmp_path / "none.jsonl")]) == 2
    assert "file not found" in capsys.readouterr().err


def test_validate_reports_mistyped_rows(tmp_path, capsys):
    path = tmp_path / "images.csv"
    path.write_text("id,latitude,longitude\na,1,2\nb,far,3\n")
    assert main(["validate", str(path), "--table", "images"]) == 2
    assert "id='b'" in capsys.readouterr().err


def test_broken_language_areas_exit_2_before_anything_is_written(tmp_path, capsys):
    areas = tmp_path / "areas.json"
    areas.write_text('{"languages": {"hi": {"regions": ["IN/Atlantis"], "countries": ["IN"], "continents": ["AS"]}}}')
    out = tmp_path / "out"
    assert main(["select-images", sample_path("images.csv"), "--languages", str(areas), "--out", str(out)]) == 2
    assert "'IN/Atlantis'" in capsys.readouterr().err
    assert not out.exists()


def _with_stdout_closed(argv: list[str], env: dict | None = None) -> subprocess.CompletedProcess:
    """`xmdata ARGV | head -0`: stdout's reader is gone before the first write (a pipe closed later
    races the command's writes, and the command may finish first)."""
    read, write = os.pipe()
    os.close(read)
    try:
        return subprocess.run([XMDATA, *argv], stdout=write, stderr=subprocess.PIPE, text=True, timeout=120,
                              env={**os.environ, "XMDATA_SERVICE": "off", **(env or {})})
    finally:
        os.close(write)


@pytest.mark.parametrize("argv", [["--help"], ["translate", "--help"], ["status"],
                                  ["validate", sample_path("captions.jsonl")]])
def test_a_closed_pipe_ends_a_command_quietly_with_the_status_of_sigpipe(argv):
    done = _with_stdout_closed(argv)
    assert (done.returncode, done.stderr) == (141, "")


def test_a_closed_pipe_that_is_not_stdout_stays_an_error(monkeypatch):
    """Only stdout's reader leaving is quiet: a BrokenPipeError from anything else (a socket) is raised."""
    from dataclasses import replace

    from xmdata import cli, commands

    def writes_to_a_closed_socket(args):
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(commands, "COMMANDS", tuple(replace(c, run=writes_to_a_closed_socket) if c.name == "validate"
                                                    else c for c in commands.COMMANDS))
    with pytest.raises(BrokenPipeError, match="Broken pipe"):
        cli.main(["validate", sample_path("captions.jsonl")])


@pytest.mark.parametrize("argv, message", [
    ([], "xmdata: error: the following arguments are required: command"),
    (["identify-language"], "xmdata: error: identify-language: the following arguments are required: input, --out"),
    (["nonsense"], "xmdata: error: argument command: invalid choice: 'nonsense'"),
    (["evaluate", "correlation", "in.parquet", "--out", "o", "--rating-scale", "x"],
     "xmdata: error: evaluate correlation: argument --rating-scale"),
    (["release", "compare", "a"], "xmdata: error: release compare: the following arguments are required: B"),
])
def test_a_usage_error_is_refused_as_every_refusal_is(argv, message, capsys):
    with pytest.raises(SystemExit, match="^2$") as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    assert err.startswith(message), err
    assert "\nusage: xmdata" in err  # the usage follows the one line


@pytest.mark.parametrize("argv, command", [
    (["memo", "prune", "--bogus"], "memo prune"),
    (["memo", "stats", "--bogus"], "memo stats"),
    (["release", "verify", "folder", "--bogus"], "release verify"),
    (["evaluate", "cider", "in.parquet", "--out", "o", "--bogus", "x"], "evaluate cider"),
    (["identify-language", "in.jsonl", "--out", "o", "--bogus"], "identify-language"),
])
def test_a_wrong_flag_shows_its_own_commands_usage(argv, command, capsys):
    """An unknown flag of a sub-command is refused by that command, with its usage (argparse's own
    parse_args gives the top-level usage, every command listed)."""
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    err = capsys.readouterr().err
    assert exit_info.value.code == 2
    bogus = " ".join(argv[argv.index("--bogus"):])
    assert err.startswith(f"xmdata: error: {command}: unrecognized arguments: {bogus}\nusage: xmdata {command} [-h]"), err
    assert "{demo,release," not in err  # not the top-level list of commands


def stderr_messages(source: str) -> list[tuple[int, str]]:
    """(line, leading text) of every print(…, file=sys.stderr) in SOURCE."""
    import ast

    found = []
    for node in ast.walk(ast.parse(source)):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print" and node.args
                and any(k.arg == "file" and ast.unparse(k.value) == "sys.stderr" for k in node.keywords)):
            first = node.args[0]
            parts = first.values if isinstance(first, ast.JoinedStr) else [first]
            found.append((node.lineno, parts[0].value if isinstance(parts[0], ast.Constant) else ""))
    return found


def test_every_error_on_stderr_begins_xmdata_error():
    """`xmdata: error: ` and the message, whatever the command: no `xmdata: error (--strict)`, no `Error:`."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    wrong = []
    for folder in ("xmdata", "runtime"):
        for dirpath, _, names in os.walk(os.path.join(root, folder)):
            for name in (n for n in names if n.endswith(".py")):
                path = os.path.join(dirpath, name)
                wrong += [f"{os.path.relpath(path, root)}:{line}: {text!r}" for line, text in
                          stderr_messages(open(path, encoding="utf-8").read())
                          if "error" in text.lower() and not text.startswith("xmdata: error: ")]
    assert wrong == []
    planted = 'import sys\nprint(f"xmdata: error (--strict): {x}", file=sys.stderr)\nprint("Error: x", file=sys.stderr)\n' \
              'print(f"xmdata: error: {x}", file=sys.stderr)\nprint("error", file=sys.stdout)\n'
    assert [line for line, text in stderr_messages(planted) if not text.startswith("xmdata: error: ")] == [2, 3]
