"""The xmdata service as a user drives it: up, status, a command that reuses it, idle workers
retired and called back, down; kill -9, and a deleted home, stop it too."""
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import psutil
import pytest

pytestmark = pytest.mark.slow
XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")
# Long enough for `status` to find the model still loaded after a command on a loaded machine.
IDLE_S = 20  # XMDATA_MODEL_IDLE_MINUTES=0.333…


def xmdata(env, *args, timeout=300):
    return subprocess.run([XMDATA, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def own_home(tmp_path_factory):
    """A service of its own (another Prefect home and state folder), not the test session's; its
    database is made once for the module. Its workers retire after IDLE_S seconds without a shard."""
    from xmdata.runtime.settings import MODEL_IDLE_MINUTES

    root = tmp_path_factory.mktemp("own-service")
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "XMDATA_EXECUTOR")}
    env.update(PREFECT_HOME=str(root / "prefect"), XMDATA_CACHE=str(root / "cache"),
               **{MODEL_IDLE_MINUTES.name: str(IDLE_S / 60)})
    return env


@pytest.fixture
def own_env(own_home):
    yield own_home
    xmdata(own_home, "down")


def service_tree(state):
    root = psutil.Process(state["pid"])
    return [root, *root.children(recursive=True)]


def state_of(env):
    folder = os.path.join(env["XMDATA_CACHE"], "service")
    (name,) = [n for n in os.listdir(folder) if n.endswith(".json")]
    return json.load(open(os.path.join(folder, name)))


def workers(service):
    """The service's worker processes, spawned by its nannies (which live in the service's process)."""
    found = []
    for proc in service.children():
        with contextlib.suppress(psutil.Error):  # one that exits meanwhile, or a zombie not yet reaped: gone
            if proc.status() != psutil.STATUS_ZOMBIE and "spawn_main" in " ".join(proc.cmdline()):
                found.append(proc)
    return found


def running(processes):
    left = []
    for proc in processes:
        with contextlib.suppress(psutil.Error):
            if proc.is_running() and proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
    return left


def asleep(process, quiet_s=0.5) -> bool:
    """The process used no CPU time for quiet_s: it sleeps, not imports (an import keeps a core busy)."""
    before = sum(process.cpu_times()[:2])
    time.sleep(quiet_s)
    return sum(process.cpu_times()[:2]) == before


def wait_for(condition, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, "waited in vain"
        time.sleep(0.2)


def test_up_reuse_idle_workers_retire_come_back_and_down_on_loopback(own_env, tmp_path):
    """One service's life as a user sees it: up, a command that reuses it, its idle workers retired
    (after IDLE_S without a shard) and called back by the next command, down. Every port on 127.0.0.1."""
    from xmdata.data import sample_path

    def lid(out):
        run = xmdata(own_env, "identify-language", sample_path("captions.jsonl"), "--out", str(out),
                     "--executor", "dask")
        assert run.returncode == 0, run.stderr[-2000:]
        assert "started the local service" not in run.stderr and state_of(own_env)["pid"] == state["pid"]
        return {name: open(os.path.join(out, "language_id", "data", name), "rb").read()
                for name in sorted(os.listdir(os.path.join(out, "language_id", "data")))}

    assert xmdata(own_env, "status").returncode == 3  # not running
    up = xmdata(own_env, "up")
    assert up.returncode == 0, up.stderr[-2000:]
    state = state_of(own_env)
    assert "Prefect API  http://127.0.0.1:" in up.stdout and state["dask_address"].startswith("tls://127.0.0.1:")
    assert "UI password  in " in up.stdout and "mutual TLS" in up.stdout
    tree = service_tree(state)
    assert len(tree) >= 4  # the service (scheduler), its Prefect server, a nanny'd worker per core
    ports = [c.laddr for p in tree for c in p.net_connections(kind="inet") if c.status == psutil.CONN_LISTEN]
    assert ports and all(addr.ip == "127.0.0.1" for addr in ports), ports

    first = lid(tmp_path / "first")
    status = xmdata(own_env, "status")
    assert status.returncode == 0 and "language_identifier:lid.176" in status.stdout  # kept warm on a worker
    assert re.search(r"command process [\d,]+, workers [\d,]+", status.stdout), status.stdout  # counted apart

    root = psutil.Process(state["pid"])
    wait_for(lambda: state_of(own_env)["retired"] and not workers(root))
    status = xmdata(own_env, "status")
    assert status.returncode == 0 and "retired" in status.stdout and "Prefect server" in status.stdout, status.stdout
    assert lid(tmp_path / "second") == first  # the workers called back: same shards, same bytes
    log = open(state["log"]).read()
    assert "workers retired" in log and "workers back in" in log

    tree = service_tree(state)  # with the workers called back
    assert len(workers(root)) == state["workers"]  # started again
    down = xmdata(own_env, "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    assert running(tree) == []  # gone when `down` returns, not a few seconds later
    assert xmdata(own_env, "status").returncode == 3


def test_a_service_whose_home_is_deleted_stops_itself(own_home, tmp_path):
    env = {**own_home, "PREFECT_HOME": str(tmp_path / "prefect"), "XMDATA_CACHE": str(tmp_path / "cache")}
    assert xmdata(env, "up", "--workers", "1").returncode == 0
    tree = service_tree(state_of(env))
    shutil.rmtree(env["PREFECT_HOME"], ignore_errors=True)  # the server may write to it meanwhile
    gone, alive = psutil.wait_procs(tree, timeout=20)  # noticed within a second, then a clean stop
    assert not alive, alive


def test_kill_9_of_the_service_leaves_nothing_running(own_env):
    assert xmdata(own_env, "up", "--workers", "1").returncode == 0  # one is enough to see it go
    tree = service_tree(state_of(own_env))
    os.kill(tree[0].pid, signal.SIGKILL)
    gone, alive = psutil.wait_procs(tree, timeout=30)
    assert not alive, f"orphaned: {alive}"  # the Prefect server and the workers went with it
    assert xmdata(own_env, "status").returncode == 3


def test_a_service_whose_prefect_server_died_ends_and_the_next_command_starts_a_new_one(own_env):
    """issue 68: the service's Prefect server gone (kill -9): the service ends rather than serve commands a
    dead server, so the next command finds none and starts a new one, on a new server."""
    assert xmdata(own_env, "up", "--workers", "1").returncode == 0
    state = state_of(own_env)
    tree = service_tree(state)
    os.kill(state["prefect_pid"], signal.SIGKILL)
    gone, alive = psutil.wait_procs(tree, timeout=60)
    assert not alive, f"the service outlived its Prefect server: {alive}"
    assert xmdata(own_env, "status").returncode == 3  # not running
    assert xmdata(own_env, "up", "--workers", "1").returncode == 0
    again = state_of(own_env)
    assert again["pid"] != state["pid"] and psutil.pid_exists(again["prefect_pid"])
    assert again["prefect_pid"] != state["prefect_pid"]


def test_down_stops_a_command_process_still_waiting_for_the_command_that_started_the_service(own_home, tmp_path):
    """The command process a command's own service start leaves waiting (until that command ends,
    command_server.wait_for_first_command) goes with the service, not after its wait and imports."""
    from xmdata.service.service_files import PID_NAME

    own_env = {**own_home, "PREFECT_HOME": str(tmp_path / "prefect"), "XMDATA_CACHE": str(tmp_path / "cache")}
    code = ("import time; from xmdata.service.service_start import ensure_service; "
            "ensure_service(quiet=True, for_this_command=True); print('up', flush=True); time.sleep(300)")
    command = subprocess.Popen([sys.executable, "-c", code], env=own_env, stdout=subprocess.PIPE, text=True)
    try:
        assert command.stdout.readline().strip() == "up"
        state = state_of(own_env)
        waiting = psutil.Process(int(open(os.path.join(state["secrets"], PID_NAME)).read()))
        deadline = time.monotonic() + 10  # a process still being exec'd shows an empty command line
        while not waiting.cmdline() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert "xmdata.service.command_server" in " ".join(waiting.cmdline())
        # Still waiting, nothing imported: once its CPU time stands still (asleep: in its wait, or
        # serving after its imports), no library of the environment (site-packages) is mapped in it.
        wait_for(lambda: asleep(waiting), timeout=30)
        assert [m.path for m in waiting.memory_maps() if "site-packages" in m.path] == []
        assert xmdata(own_env, "down").returncode == 0
        # its parent is the command, still running, which has not reaped it: a zombie is gone
        wait_for(lambda: not waiting.is_running() or waiting.status() == psutil.STATUS_ZOMBIE, timeout=10)
    finally:
        command.kill()
        command.wait()
        xmdata(own_env, "down")


def test_down_names_what_outlives_the_service(tmp_path, service):
    """A process of the service's that ignores SIGTERM: `down` waits for it, then names it (exit 1). The
    running service's state (this test run's) is left alone: it describes another service."""
    from xmdata.service.service import ServiceError, read_state
    from xmdata.service.service_stop import stop_service

    stubborn = ("import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                "print('ready', flush=True); time.sleep(120)")
    code = f"import subprocess, sys, time; subprocess.Popen([sys.executable, '-c', {stubborn!r}]); time.sleep(120)"
    stand_in = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        assert stand_in.stdout.readline().strip() == "ready"
        parent = psutil.Process(stand_in.pid)
        (child,) = parent.children()
        with pytest.raises(ServiceError, match=r"signal\.SIG_IGN") as refused:
            stop_service({"pid": stand_in.pid, "secrets": str(tmp_path)}, timeout=30, grace=1)
        assert f"{child.pid} (" in str(refused.value) and "signal.SIG_IGN" in str(refused.value)
        assert running([parent]) == []  # the service itself went
        assert read_state()["pid"] == service["pid"]  # before, its state file was removed: the next command restarted it
    finally:
        with contextlib.suppress(psutil.Error):
            child.kill()
        stand_in.kill()


def test_a_flow_run_outside_any_command_finds_the_services_cluster_by_its_entry_point(service, monkeypatch):
    """A deployment run has no command to hand its session the service's cluster: the runtime finds it
    through the `xmdata.warm_cluster` entry point (service/run_setup.py), never importing the service."""
    from xmdata.runtime.session import ExecutionSession, found_warm_cluster
    from xmdata.service.service import paths

    found = found_warm_cluster()
    assert found["service_log"] == paths()["log"] and callable(found["service_address"])
    assert ExecutionSession("auto", **found).has_warm_cluster
    monkeypatch.setenv("XMDATA_SERVICE", "off")
    assert found_warm_cluster() == {}
