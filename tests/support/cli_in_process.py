"""`xmdata` run inside the test process, for tests about what a command makes rather than how its
process behaves (signals, exit of children, the service: those keep subprocesses).

A subprocess pays the imports of torch, transformers, comet and open_clip again (~7 CPU-s) on
every call; in this process they are paid once for the whole test run, and the tiny models stay
loaded in the registry. The environment is the one given, for the call only."""
from __future__ import annotations

import contextlib
import io
import os
import subprocess


def run_xmdata(args: list[str], env: dict) -> subprocess.CompletedProcess:
    """Like subprocess.run([xmdata, *args], env=env, capture_output=True, text=True)."""
    from xmdata.cli import main

    saved = dict(os.environ)
    if "XMDATA_MEMO" in saved and "XMDATA_MEMO" not in env:  # the test's own memo (conftest)
        env = {**env, "XMDATA_MEMO": saved["XMDATA_MEMO"]}
    stdout, stderr = io.StringIO(), io.StringIO()
    os.environ.clear()
    os.environ.update(env)
    try:
        with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
            try:
                code = main([str(a) for a in args])
            except SystemExit as exc:  # argparse's usage errors
                code = exc.code if isinstance(exc.code, int) else 2
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return subprocess.CompletedProcess(["xmdata", *args], code, stdout.getvalue(), stderr.getvalue())
