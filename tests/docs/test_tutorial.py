"""The tutorial's commands, read out of docs/tutorial.md itself and run as written (the page cannot
drift): from a folder holding the checkout's data/, `xmdata` in this process, the rest in bash, the
page's web server in the background on a free port of 127.0.0.1."""
from __future__ import annotations

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "tutorial.md")
PORT = "8765"  # the page's; replaced by a free one here


def tutorial_commands(text: str) -> list[str]:
    """Every command of the page's ```bash blocks, in order: a line with its `\\` continuations, or a
    line with a here-document and its body."""
    commands = []
    for block in re.findall(r"^```bash\n(.*?)^```", text, flags=re.S | re.M):
        lines = block.splitlines()
        while lines:
            line = lines.pop(0)
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            while line.endswith("\\"):
                line = line[:-1] + lines.pop(0).strip()
            if heredoc := re.search(r"<<'(\w+)'", line):
                end = lines.index(heredoc.group(1))
                line = "\n".join([line, *lines[:end + 1]])
                lines = lines[end + 1:]
            commands.append(line)
    return commands


def test_the_tutorial_takes_every_step_and_its_xmdata_commands_parse():
    from xmdata.cli_parser import build_parser

    commands = tutorial_commands(open(PAGE, encoding="utf-8").read())
    xmdata = [shlex.split(c)[1:] for c in commands if c.startswith("xmdata ")]
    steps = [args[0] for args in xmdata]
    for step in ("import", "download-images", "select-images", "models", "translate", "score", "dedup",
                 "contamination", "release", "explore", "explain"):
        assert step in steps, f"the tutorial has no `xmdata {step}`"
    assert any("http.server" in c and "--bind 127.0.0.1" in c and c.endswith("&") for c in commands)
    parser = build_parser()
    for args in xmdata:
        parser.parse_args(args)  # an option the parser no longer has exits 2 here


@pytest.mark.slow
def test_every_command_of_the_tutorial_runs(tmp_path, cli_env, monkeypatch):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = str(probe.getsockname()[1])
    os.symlink(os.path.join(ROOT, "data"), tmp_path / "data")
    env = {**cli_env, "PATH": os.path.dirname(sys.executable) + os.pathsep + cli_env.get("PATH", "")}
    monkeypatch.chdir(tmp_path)
    background, outputs = [], {}
    try:
        for command in tutorial_commands(open(PAGE, encoding="utf-8").read()):
            command = command.replace(PORT, port)
            if command.startswith("xmdata "):
                args = shlex.split(command)[1:]
                result = run_xmdata(args, env)
                outputs[args[0]] = result.stdout
            elif command.endswith("&"):
                background.append(subprocess.Popen(["bash", "-c", "exec " + command[:-1]], cwd=tmp_path, env=env,
                                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                   start_new_session=True))
                continue
            else:
                result = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True)
            assert result.returncode == 0, f"{command}\n{result.stdout[-2000:]}\n{result.stderr[-3000:]}"
    finally:
        for process in background:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait()
    out = tmp_path / "tutorial"
    assert json.loads((out / "downloaded" / "summary.json").read_text())["distributions"]["status"] == {"ok": 4}
    contaminated = pq.read_table(out / "contamination" / "rejects.parquet").to_pylist()
    assert {(r["row_id"], r["reason"]) for r in contaminated} >= {("a1/en/0", "contaminated")}
    assert (out / "release" / "manifest.json").is_file() and (out / "release" / "explore" / "index.html").is_file()
    assert "contaminat" in outputs["explain"]
