"""The xmdata service as a user drives it: up, status, a command that reuses it, down, and kill -9."""
import json
import os
import signal
import subprocess
import sys

import psutil
import pytest

pytestmark = pytest.mark.slow
XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")


def xmdata(env, *args, timeout=300):
    return subprocess.run([XMDATA, *args], env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def own_home(tmp_path_factory):
    """A service of its own (another Prefect home and state folder), not the test session's; its
    database is made once for the module."""
    root = tmp_path_factory.mktemp("own-service")
    env = {k: v for k, v in os.environ.items() if k not in ("PREFECT_API_URL", "XMDATA_EXECUTOR")}
    env.update(PREFECT_HOME=str(root / "prefect"), XMDATA_CACHE=str(root / "cache"))
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


def test_up_status_reuse_down_and_every_port_on_loopback(own_env, tmp_path):
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

    from xmdata.data import sample_path

    run = xmdata(own_env, "identify-language", sample_path("captions.jsonl"), "--out", str(tmp_path / "lid"),
                 "--executor", "dask")
    assert run.returncode == 0, run.stderr[-2000:]
    assert "started the local service" not in run.stderr and state_of(own_env)["pid"] == state["pid"]
    status = xmdata(own_env, "status")
    assert status.returncode == 0 and "language_identifier:lid.176" in status.stdout  # kept warm on a worker

    down = xmdata(own_env, "down")
    assert down.returncode == 0 and "stopped" in down.stdout
    gone, alive = psutil.wait_procs(tree, timeout=30)
    assert not alive, alive
    assert xmdata(own_env, "status").returncode == 3


def test_kill_9_of_the_service_leaves_nothing_running(own_env):
    assert xmdata(own_env, "up", "--workers", "1").returncode == 0  # one is enough to see it go
    tree = service_tree(state_of(own_env))
    os.kill(tree[0].pid, signal.SIGKILL)
    gone, alive = psutil.wait_procs(tree, timeout=30)
    assert not alive, f"orphaned: {alive}"  # the Prefect server and the workers went with it
    assert xmdata(own_env, "status").returncode == 3
