"""The service's warm command process: a command handed to it runs there (its output, files and exit
status are the command's own), a command of another import-time environment is refused (and then runs
in its own process), signals reach it, and a killed client does not leave it running."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from xmdata.service.client import Forwarder, Stopped, command_process, run_there
from xmdata.service.service_files import INFO_NAME
from xmdata.service.warm_cold import decide

XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")


@pytest.fixture(scope="module")
def command_env(service):
    """The environment of the running service's command process (it imports for a few seconds after
    the service starts): the one a client must share to be served there. Under xdist it is the
    environment of whichever worker started the service (each worker has its own DASK_* folder)."""
    deadline = time.monotonic() + 180
    while (path := command_process()) is None:
        assert time.monotonic() < deadline, f"no command process for {service['secrets']}"
        time.sleep(0.5)
    pid = json.loads(open(os.path.join(os.path.dirname(path), INFO_NAME)).read())["pid"]
    with open(f"/proc/{pid}/environ", "rb") as f:
        return dict(item.decode().split("=", 1) for item in f.read().split(b"\0") if b"=" in item)


@pytest.fixture
def command_socket(command_env, monkeypatch):
    """Its socket, with this test's environment made the command process's (the autouse fixture
    puts the test's own back)."""
    for name in list(os.environ):
        if name not in command_env:
            monkeypatch.delenv(name)
    for name, value in command_env.items():
        monkeypatch.setenv(name, value)
    return command_process()


def _captions(path, n=10):
    pq.write_table(pa.table({"id": [f"c{i}" for i in range(n)],
                             "text": [f"This is the English sentence number {i}." for i in range(n)]}), path)
    return str(path)


def test_a_command_runs_in_the_command_process_with_its_own_folder_and_streams(command_socket, tmp_path,
                                                                               monkeypatch, capfd):
    monkeypatch.chdir(tmp_path)  # a relative --out lands in the client's folder, not the server's
    code = run_there(command_socket, ["identify-language", _captions(tmp_path / "in.parquet"), "--out", "out"])
    out, err = capfd.readouterr()
    assert code == 0, err[-2000:]
    assert "done in" in out and (tmp_path / "out" / "summary.json").is_file()
    assert json.loads((tmp_path / "out" / "summary.json").read_text())  # the command's own output


def test_bad_input_is_the_same_one_line_and_exit_status_there(command_socket, tmp_path, capfd):
    code = run_there(command_socket, ["identify-language", str(tmp_path / "missing.parquet"), "--out",
                                      str(tmp_path / "o")])
    _, err = capfd.readouterr()
    assert code == 2
    assert err.strip().splitlines() == [f"xmdata: error: {tmp_path / 'missing.parquet'}: file not found"]
    assert not (tmp_path / "o").exists()


def test_another_import_time_environment_is_refused_and_runs_here(command_socket, monkeypatch):
    monkeypatch.setenv("POLARS_MAX_THREADS", "1")  # polars reads it when its pool starts: not the same process
    assert run_there(command_socket, ["identify-language", "--help"]) is None
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "DEBUG")
    assert run_there(command_socket, ["status"]) is None


def test_what_manages_the_service_runs_here():
    from xmdata.service.warm_cold import import_time_hashes

    env = {}
    info = {"socket": "s", "import_time": import_time_hashes(env)}
    assert all(decide(argv, env, info)[0] is None
               for argv in (["up"], ["down"], ["status"], ["worker", "x"], ["-v", "score"], []))
    assert all(decide(argv, env, info)[0] == "s" for argv in (["identify-language", "in.parquet", "--out", "o"],
                                                              ["score", "--help"], ["--help"]))


def test_help_there_is_the_help_here(command_socket, capfd):
    from xmdata.cli_parser import build_parser

    assert run_there(command_socket, ["score", "--help"]) == 0
    out, _ = capfd.readouterr()
    assert out == build_parser().commands["score"][0].format_help()


def test_a_closed_pipe_ends_a_command_there_as_here(command_socket, capfd):
    """`xmdata translate --help | head -0` run by the command process: quiet, 141, as in its own process
    (tests/cli/test_cli.py)."""
    read, write = os.pipe()
    os.close(read)
    saved = os.dup(1)
    os.dup2(write, 1)  # the descriptor the client hands over is the closed pipe
    try:
        code = run_there(command_socket, ["translate", "--help"])
    finally:
        os.dup2(saved, 1)
        os.close(saved)
        os.close(write)
    assert code == 141  # not None: the command process ran it
    assert capfd.readouterr().err == ""


def _children(pid: int) -> set[int]:
    found = set()
    for task in os.listdir(f"/proc/{pid}/task"):
        with open(f"/proc/{pid}/task/{task}/children") as f:
            found |= {int(p) for p in f.read().split()}
    return found


def _blocked_command(tmp_path, command_socket):
    """A client whose command blocks reading a FIFO no one writes, and the command's process."""
    fifo = tmp_path / "never.jsonl"
    os.mkfifo(fifo)
    server = json.loads(open(os.path.join(os.path.dirname(command_socket), INFO_NAME)).read())["pid"]
    before = _children(server)
    client = subprocess.Popen([XMDATA, "identify-language", str(fifo), "--out", str(tmp_path / "o")],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=os.environ.copy())
    deadline = time.monotonic() + 60
    while not (new := _children(server) - before):
        if client.poll() is not None or time.monotonic() > deadline:
            client.kill()  # blocked on the FIFO when it runs in its own process: it never ends by itself
            pytest.fail(f"the command did not run in the command process (client status {client.wait()})")
        time.sleep(0.1)
    child = new.pop()
    # A signal must find the command blocked on the FIFO, not still starting (before `main` runs, a
    # KeyboardInterrupt is not the command's: exit 1, seen once in CI).
    deadline = time.monotonic() + 30
    while _blocked_in(child) is False and time.monotonic() < deadline:
        time.sleep(0.05)
    return client, child


def _blocked_in(pid: int) -> bool | None:
    """Whether PID waits for a FIFO's writer (Linux's wchan); None where the kernel does not say."""
    try:
        with open(f"/proc/{pid}/wchan") as f:
            where = f.read().strip()
    except OSError:
        return None
    return None if where in ("", "0") else where == "wait_for_partner"


def _gone(pid: int, seconds: float = 30) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        with open(f"/proc/{pid}/stat") as f:
            if f.read().split()[2] == "Z":  # exited, its parent not yet there to reap it
                return True
        time.sleep(0.1)
    return False


def test_ctrl_c_reaches_the_command_and_a_killed_client_leaves_nothing_running(command_socket, tmp_path):
    (tmp_path / "a").mkdir()
    client, child = _blocked_command(tmp_path / "a", command_socket)
    client.send_signal(signal.SIGINT)
    assert client.wait(timeout=60) == 130
    assert _gone(child)
    (tmp_path / "b").mkdir()
    client, child = _blocked_command(tmp_path / "b", command_socket)
    client.kill()
    client.wait(timeout=10)
    assert _gone(child), f"the command {child} still runs after its client was killed"


def test_a_signal_before_the_command_has_a_pid_reaches_it_once_it_has_one():
    """A Ctrl-C between sending the command and learning its pid (seen in a loaded run: the client
    died of the SIGINT, status -2, instead of 130) is kept and sent to the command; a second signal
    before the pid stops the wait (a command process that hangs must not make Ctrl-C useless); the
    handlers come back as they were."""
    before = {signum: signal.getsignal(signum) for signum in (signal.SIGINT, signal.SIGTERM)}
    command = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    forwarder = Forwarder()
    try:
        os.kill(os.getpid(), signal.SIGINT)  # handled here at once (the main thread): kept, not raised
        assert forwarder.pending == [signal.SIGINT] and command.poll() is None
        forwarder.started(command.pid)
        assert command.wait(timeout=30) == -signal.SIGINT
    finally:
        forwarder.restore()
        command.kill()
    assert {signum: signal.getsignal(signum) for signum in before} == before
    waiting = Forwarder()
    try:
        os.kill(os.getpid(), signal.SIGTERM)
        with pytest.raises(Stopped) as stopped:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(5)  # the handler raises at once, in this thread
        assert stopped.value.signum == signal.SIGINT and waiting.child is None
    finally:
        waiting.restore()
    assert {signum: signal.getsignal(signum) for signum in before} == before


def test_a_credential_is_never_hashed_into_commands_json_and_never_sends_a_command_cold(command_socket, monkeypatch):
    from xmdata.service.warm_cold import CREDENTIALS, import_time_hashes

    plain = {"HF_HOME": "/h", "PATH": "/bin"}
    tokens = plain | {name: f"secret-{name}" for name in CREDENTIALS}
    assert import_time_hashes(tokens) == import_time_hashes(plain)  # what commands.json holds: the same
    assert not set(import_time_hashes(tokens)) & set(CREDENTIALS)
    info = {"socket": "s", "import_time": import_time_hashes(plain)}
    assert decide(["publish", "r", "me/x"], tokens, info)[0] == "s"  # warm: read as the command runs
    monkeypatch.setenv("HF_TOKEN", "hf_another_token")  # the warm process was started without one
    assert run_there(command_socket, ["score", "--help"]) == 0


def test_the_command_process_builds_the_models_prefect_defers_so_that_no_command_builds_them_again():
    """pydantic's defer_build: Prefect's models build their validators at first use, which in a fork
    of the command process was every command's (a flow run's state, flow-run and artifact models)."""
    probe = ("from prefect.client.schemas.actions import ArtifactCreate, FlowRunCreate\n"
             "from prefect.client.schemas.objects import FlowRun\n"
             "models = [FlowRunCreate, ArtifactCreate, FlowRun]\n"
             "before = [m.__pydantic_complete__ for m in models]\n"
             "from xmdata.service.warm_imports import build_deferred_models\n"
             "build_deferred_models()\n"
             "print(before, [m.__pydantic_complete__ for m in models])\n")
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[False, False, False] [True, True, True]"
