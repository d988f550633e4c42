"""The same command, the same behaviour, warm or cold: a command run by the service's warm command
process and one run in a process of its own (XMDATA_SERVICE=off) write the same files, print the same
lines and end with the same status. Which variables leave a command warm when they differ is declared
once (service/warm_cold.py), and `-v` says warm or cold, and why."""
from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import time

import pytest

from xmdata.runtime import settings
from xmdata.service.warm_cold import CREDENTIALS, WARM_WHEN_DIFFERENT, decide, import_time_hashes


def info_for(env: dict) -> dict:
    """What a warm command process started in ENV publishes about itself (commands.json)."""
    return {"socket": "/nowhere/commands.sock", "import_time": import_time_hashes(env)}


BASE = {"PATH": "/usr/bin", "HOME": "/home/someone", "PYTHONPATH": "/src", "HF_HOME": "/hf"}
COMMAND = ["identify-language", "in.jsonl", "--out", "o"]


def test_only_the_declared_variables_leave_a_command_warm_when_they_differ():
    info = info_for(BASE)
    assert decide(COMMAND, BASE, info) == ("/nowhere/commands.sock", "warm: the service's command process")
    for name in WARM_WHEN_DIFFERENT:  # PYTHONDONTWRITEBYTECODE, PYTHONUNBUFFERED: warm, the fork follows them
        assert decide(COMMAND, {**BASE, name: "1"}, info)[0] is not None, name
    assert set(WARM_WHEN_DIFFERENT) == {"PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED", *CREDENTIALS}
    for name in ("PYTHONPATH", "PYTHONHASHSEED", "HF_HOME", "TORCH_HOME", "CUDA_VISIBLE_DEVICES", "OMP_NUM_THREADS",
                 "MKL_NUM_THREADS", "PREFECT_LOGGING_LEVEL", "LD_PRELOAD"):
        where, why = decide(COMMAND, {**BASE, name: "other"}, info)
        assert where is None and why.startswith(f"cold: {name} differs from the warm command process's ("), (name, why)
    where, why = decide(COMMAND, {k: v for k, v in BASE.items() if k != "PYTHONPATH"}, info)  # unset there too
    assert where is None and "PYTHONPATH" in why
    assert decide(COMMAND, {**BASE, "SOME_TOOL_TOKEN": "x"}, info)[0] is not None  # read as the command runs: warm


def test_why_cold_is_said_for_every_other_case(monkeypatch):
    info = info_for(BASE)
    assert decide(["-v", *COMMAND], BASE, info) == (None, "cold: -v (Prefect's and Dask's log levels are set as "
                                                          "they load; the warm command process has them quiet)")
    where, why = decide(["-v", *COMMAND], {**BASE, "PYTHONPATH": "/other"}, info)
    assert where is None and why.startswith("cold: -v (") and "; and PYTHONPATH differs" in why
    assert decide(["down"], BASE, info)[1] == "cold: `down` manages or is the service: it runs in its own process"
    assert decide(COMMAND, BASE, None)[1].startswith("cold: no warm command process")
    monkeypatch.setenv(settings.SERVICE.name, "off")  # this process's setting, as the entry point reads it
    assert decide(COMMAND, BASE, info) == (None, "cold: XMDATA_SERVICE=off")


def normalised(text: str) -> str:
    """Output less what differs from run to run: durations, and the progress bars' rates."""
    lines = [line for line in re.split(r"[\r\n]", text) if "rows/s" not in line and "it/s" not in line]
    return re.sub(r"\d+(\.\d+)? s\b", "N s", "\n".join(lines))


def files_of(folder: str) -> dict[str, str]:
    """{relative path: sha256} of every file a command wrote but those that describe the run, not the data:
    run.json (its seconds) and prefect-server.log (the log of the Prefect server a command starts for
    itself when there is no service: service/run_setup.py)."""
    found = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            if name not in ("run.json", "prefect-server.log"):
                found[os.path.relpath(path, folder)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return found


@pytest.mark.slow
def test_a_command_behaves_the_same_with_the_service_up_or_off(service, tmp_path):
    """Through the `xmdata` entry point as a user runs it: warm (the command process is up, and `-v`
    would say so) and cold (XMDATA_SERVICE=off); each command's output files, lines and status equal."""
    from xmdata.service.client import command_process

    deadline = time.monotonic() + 180
    while command_process() is None:  # it imports for a few seconds after the service starts
        assert time.monotonic() < deadline, "no warm command process"
        time.sleep(0.5)
    xmdata = os.path.join(os.path.dirname(sys.executable), "xmdata")
    (tmp_path / "in.jsonl").write_text("".join(f'{{"id": "c{i}", "text": "This is English sentence {i}."}}\n'
                                               for i in range(5)))
    commands = (["identify-language", "in.jsonl", "--out", "out"],  # files written
                ["identify-language", "missing.parquet", "--out", "out2"],  # a refused input: exit 2, one line
                ["identify-language", "in.jsonl", "--out", "out3", "--shards", "0"],  # a usage error
                ["validate", "in.jsonl", "--table", "captions"],  # every row fine: exit 0
                ["validate", "twice.jsonl", "--table", "captions"])  # rows refused (an id twice): exit 1
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "XMDATA_EXECUTOR")}
    runs = {}
    folder = tmp_path / "run"  # one folder, emptied between the two: the paths printed are the same
    for how, extra in (("warm", {}), ("cold", {settings.SERVICE.name: "off"})):
        if folder.exists():
            folder.rename(tmp_path / f"before-{how}")
        folder.mkdir()
        (folder / "in.jsonl").write_bytes((tmp_path / "in.jsonl").read_bytes())
        (folder / "twice.jsonl").write_text('{"id": "a", "text": "One."}\n{"id": "a", "text": "Two."}\n')
        for argv in commands:
            done = subprocess.run([xmdata, *argv], cwd=folder, env={**env, **extra}, capture_output=True, text=True,
                                  timeout=600)
            runs.setdefault(tuple(argv), []).append((done.returncode, normalised(done.stdout), normalised(done.stderr)))
        runs[("files",)] = runs.get(("files",), []) + [files_of(str(folder / "out"))]
    for argv, (warm, cold) in runs.items():
        assert warm == cold, argv
    assert [runs[tuple(argv)][0][0] for argv in commands] == [0, 2, 2, 0, 1]
    assert runs[("files",)][0] and "summary.json" in runs[("files",)][0]


@pytest.mark.slow
def test_a_warm_command_stops_the_decoders_it_started(service, tmp_path):
    """A command forked by the warm command process ends with os._exit, which runs no exit handler: the
    decoder processes its scoring started are stopped before it reports (runtime/process_end.py), so
    nothing is left for the multiprocessing resource tracker to clean up and warn about on the user's
    stderr ("leaked semaphore objects"). stderr is read to its end: the tracker and the decoders hold it too."""
    from PIL import Image

    from xmdata.service.client import command_process
    from xmdata.models.tiny import cached_tiny_models

    deadline = time.monotonic() + 180
    while command_process() is None:
        assert time.monotonic() < deadline, "no warm command process"
        time.sleep(0.5)
    for i in range(3):
        Image.new("RGB", (64, 48), (40 * i, 90, 200)).save(tmp_path / f"{i}.jpg")
    (tmp_path / "pairs.jsonl").write_text("".join(f'{{"id": "p{i}", "text": "a photo {i}", "image_path": "{i}.jpg"}}\n'
                                                  for i in range(3)))
    xmdata = os.path.join(os.path.dirname(sys.executable), "xmdata")
    # A user's shell, not this process's: earlier tests' in-process commands may have set Prefect's API here.
    env = {k: v for k, v in os.environ.items()
           if k not in ("PREFECT_API_URL", "PREFECT_API_AUTH_STRING", "XMDATA_EXECUTOR")}
    from xmdata.service.client import command_process_info

    # The environment the service's command process runs with, as a user's shell that started it has it:
    # under xdist each test worker has its own DASK_TEMPORARY_DIRECTORY (conftest.py), the service is the one
    # whichever worker started it; and earlier tests' in-process runs leave variables here (a shard's thread
    # share) that the service never had.
    from xmdata.service.warm_cold import differing

    info = command_process_info()
    run = os.environ["XMDATA_TEST_RUN"]
    for candidate in [env] + [{**env, "DASK_TEMPORARY_DIRECTORY": os.path.join(run, name, "dask")}
                              for name in os.listdir(run)]:
        differ = set(differing(import_time_hashes(candidate), info["import_time"]))
        trial = {k: v for k, v in candidate.items() if k not in differ or k == "DASK_TEMPORARY_DIRECTORY"}
        if decide(["score"], trial, info)[1].startswith("warm"):
            env = trial
            break
    assert decide(["score"], env, command_process_info())[1].startswith("warm"), "the command would not run warm"
    for run in range(2):
        done = subprocess.run([xmdata, "score", "pairs.jsonl", "--out", f"out{run}", "--shards", "1",
                               "--clip-model", cached_tiny_models()["open_clip"].name_or_path, "--decoders", "2"],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        assert "3 of 3 pairs scored" in done.stdout
        assert "leaked" not in done.stderr and "resource_tracker" not in done.stderr, done.stderr[-2000:]
