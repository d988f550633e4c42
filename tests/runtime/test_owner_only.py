"""Only the owner gets in: the service's scheduler, its workers and its Prefect API refuse whoever has
not its credentials (a plain client, TLS without a certificate, another CA's certificate, no
password), and let the owner's processes in; its files are private; a state folder others can
write to is refused; and, run as root where `useradd` works, a real second account is refused."""
import base64
import json
import os
import pwd
import shutil
import socket
import ssl
import stat
import subprocess
import sys
import textwrap
import urllib.error
import urllib.request

import pytest

from support.required import skip_unless_required

from xmdata.runtime.owner_only import DaskTarget, NotPrivate, new_dask_credentials, private_folder
from xmdata.runtime.settings import REQUIRE_ROOT_TESTS

XMDATA = os.path.join(os.path.dirname(sys.executable), "xmdata")


def host_port(address: str) -> tuple[str, int]:
    host, port = address.split("://", 1)[1].rsplit(":", 1)
    return host, int(port)


def answers_without_a_certificate(address: str) -> bool:
    """A TLS client that trusts anything and shows no certificate: does the server talk to it?
    (TLS 1.3 asks for the client's certificate after the handshake: the refusal comes on read.)"""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE
    try:
        with socket.create_connection(host_port(address), timeout=5) as raw, \
                context.wrap_socket(raw) as tls:
            tls.sendall(b"\0" * 8)
            return bool(tls.recv(1))
    except (ssl.SSLError, ConnectionError, TimeoutError, OSError):
        return False


def dask_client_connects(address: str, security=None) -> bool:
    from distributed import Client

    try:
        with Client(address, security=security, timeout=5, set_as_default=False) as client:
            return bool(client.run(os.getpid))
    except (OSError, TypeError):  # TypeError: Dask's own refusal of TLS without a certificate
        return False


def rpc_answers(address: str, security) -> bool:
    """A raw Dask comm to a worker or nanny (what a Client would open to run code there)."""
    import asyncio

    from distributed.comm import connect

    async def talk():
        comm = await connect(address, timeout=5, **security.get_connection_args("client"))
        await comm.write({"op": "identity"})
        answer = await comm.read()
        await comm.close()
        return bool(answer)

    try:
        return asyncio.run(talk())
    except (OSError, TypeError):
        return False


def test_the_services_scheduler_and_workers_refuse_whoever_has_not_its_certificate(service):
    from distributed.security import Security

    from xmdata.service.service import service_target

    target = service_target(service)
    assert target.address.startswith("tls://")
    owner = target.security()
    assert dask_client_connects(target.address, owner)  # the owner's processes get in
    from xmdata.runtime.cluster import connect

    with connect(target) as client:
        workers = list(client.scheduler_info(n_workers=-1)["workers"])
        nannies = [info["nanny"] for info in client.scheduler_info(n_workers=-1)["workers"].values()]
    assert workers and all(w.startswith("tls://") for w in workers + nannies)
    stranger = new_dask_credentials("stranger").security()  # a certificate, but from another CA
    for address in [target.address, *workers, *nannies]:
        assert rpc_answers(address, owner), address
        # A plain tcp:// comm, as the issue's `distributed.Client("tcp://…")` opens it.
        assert not rpc_answers(address.replace("tls://", "tcp://"), Security()), address
        assert not rpc_answers(address, stranger), address
        assert not answers_without_a_certificate(address), address


def post(url: str, auth: str | None = None, body: bytes = b"{}") -> int:
    request = urllib.request.Request(url, data=body, method="POST", headers={"Content-Type": "application/json"})
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def events_socket(api_url: str, token: str | None, subprotocol: bool = True) -> str:
    """Prefect's events stream (PrefectHQ/prefect#17687): 'auth_success' or why it was closed."""
    from websockets.exceptions import ConnectionClosed, InvalidStatus
    from websockets.sync.client import connect

    url = api_url.replace("http://", "ws://") + "/events/out"
    try:
        with connect(url, subprotocols=["prefect"] if subprotocol else None, open_timeout=10) as ws:
            ws.send(json.dumps({"type": "auth", "token": token}))
            return json.loads(ws.recv(timeout=10))["type"]
    except ConnectionClosed as exc:
        return f"closed {exc.rcvd.code if exc.rcvd else ''}"
    except InvalidStatus as exc:
        return f"refused {exc.response.status_code}"


def test_the_prefect_api_and_its_events_stream_ask_for_the_password(service):
    from xmdata.service.service import prefect_auth

    api, auth = service["prefect_api_url"], prefect_auth(service)
    assert auth.startswith("xmdata:") and len(auth) > 30
    assert post(f"{api}/flows/filter") == 401  # as the second account asked
    assert post(f"{api}/flows/filter", "xmdata:guess") == 401
    assert post(f"{api}/deployments/filter") == 401
    assert post(f"{api}/flows/filter", auth) == 200
    with urllib.request.urlopen(f"{api}/health", timeout=10) as r:  # probes only
        assert r.status == 200
    assert events_socket(api, auth) == "auth_success"
    assert events_socket(api, None).startswith("closed")
    assert events_socket(api, "xmdata:guess").startswith("closed")
    assert events_socket(api, None, subprotocol=False).startswith(("closed", "refused"))


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_everything_the_service_writes_is_private(service):
    from prefect.settings import PREFECT_HOME

    from xmdata.service.service import paths, state_dir

    assert mode(state_dir()) == 0o700 and mode(service["secrets"]) == 0o700
    for name in ("state", "log", "lock", "used"):
        assert mode(paths()[name]) == 0o600, name
    for name in os.listdir(service["secrets"]):  # ca.pem cert.pem key.pem prefect-auth
        assert mode(os.path.join(service["secrets"], name)) == 0o600, name
    assert {"key.pem", "prefect-auth"} <= set(os.listdir(service["secrets"]))
    assert "ca-key.pem" not in os.listdir(service["secrets"])  # the CA signs once; its key is not kept
    database = os.path.join(str(PREFECT_HOME.value()), "prefect.db")
    assert mode(database) == 0o600  # the runs' parameters, logs and artifacts


@pytest.mark.parametrize("how, expected", [("writable", "can be written by other users"),
                                           ("foreign", "not to you")])
def test_a_state_folder_someone_else_can_write_is_refused_before_anything_starts(how, expected, tmp_path):
    cache = tmp_path / "cache"
    folder = cache / "service"
    folder.mkdir(parents=True)
    if how == "writable":
        os.chmod(folder, 0o777)
    else:
        if os.geteuid() != 0:
            skip_unless_required("giving a folder to another user needs root", REQUIRE_ROOT_TESTS)
        os.chown(folder, 65534, 65534)
    env = {**os.environ, "XMDATA_CACHE": str(cache), "PREFECT_HOME": str(tmp_path / "prefect")}
    env.pop("PREFECT_API_URL", None)
    up = subprocess.run([XMDATA, "up"], env=env, capture_output=True, text=True, timeout=120)
    assert up.returncode == 2 and expected in up.stderr and "Traceback" not in up.stderr, up.stderr
    assert os.listdir(folder) == []  # no state, log or credentials written there
    with pytest.raises(NotPrivate, match=expected):
        private_folder(str(folder))


def test_private_folder_tightens_a_readable_one_and_credentials_read_back(tmp_path):
    folder = tmp_path / "readable"
    folder.mkdir(mode=0o755)
    os.chmod(folder, 0o755)
    private_folder(str(folder))
    assert mode(folder) == 0o700
    written = new_dask_credentials().write(str(tmp_path / "tls"))
    assert mode(tmp_path / "tls") == 0o700 and all(mode(p) == 0o600 for p in (written.ca, written.cert, written.key))
    assert open(written.ca).read().startswith("-----BEGIN CERTIFICATE-----")


@pytest.mark.parametrize("address, warned", [("tcp://10.1.2.3:8786", True), ("tcp://127.0.0.1:8786", False),
                                             ("tcp://localhost:8786", False), ("10.1.2.3:8786", True)])
def test_a_plain_tcp_scheduler_off_this_machine_is_accepted_with_one_warning(address, warned, capsys):
    from xmdata.runtime.owner_only import external_target

    assert external_target(address) == DaskTarget(address)
    err = capsys.readouterr().err
    assert (err.count("\n") == 1 and "not encrypted or authenticated" in err) if warned else err == ""


def test_tls_flags_are_checked_before_anything_starts(tmp_path, capsys):
    from xmdata.cli import main
    from xmdata.data import sample_path

    tls = new_dask_credentials().write(str(tmp_path / "tls"))
    base = ["identify-language", sample_path("captions.jsonl"), "--out", str(tmp_path / "out")]
    cases = [(["--dask-address", "tls://127.0.0.1:1"], "needs --tls-ca-file"),
             (["--dask-address", "tls://127.0.0.1:1", "--tls-ca-file", tls.ca], "go together"),
             (["--dask-address", "tcp://127.0.0.1:1", *tls.worker_flags()], "for a tls:// address"),
             (["--dask-address", "tls://127.0.0.1:1", "--tls-ca-file", str(tmp_path / "no.pem"),
               "--tls-cert", tls.cert, "--tls-key", tls.key], "no such file"),
             ([*tls.worker_flags()], "are for a tls:// --dask-address")]
    for flags, expected in cases:
        assert main([*base, *flags]) == 2, flags
        err = capsys.readouterr().err
        assert expected in err and err.count("\n") == 1, (flags, err)
    assert not (tmp_path / "out").exists() or not os.listdir(tmp_path / "out")



def test_a_worker_for_a_tls_scheduler_without_flags_needs_dasks_worker_certificate(tmp_path, capsys, monkeypatch):
    """`xmdata worker tls://…`: the flags, or Dask's CA file and *worker* certificate and key; else
    one line, exit 2, before any `dask worker` starts."""
    import dask

    from xmdata.cli import main
    from xmdata.runtime import worker_command

    started = []
    monkeypatch.setattr(worker_command.subprocess, "call", lambda command: started.append(command) or 0)
    tls = new_dask_credentials().write(str(tmp_path / "tls"))
    client_only = {"distributed.comm.tls.ca-file": tls.ca, "distributed.comm.tls.client.cert": tls.cert,
                   "distributed.comm.tls.client.key": tls.key}
    with dask.config.set(client_only):
        assert main(["worker", "tls://127.0.0.1:1"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "distributed.comm.tls.worker.cert, distributed.comm.tls.worker.key" in err
    with dask.config.set({**client_only, "distributed.comm.tls.worker.cert": tls.cert,
                          "distributed.comm.tls.worker.key": tls.key}):
        assert main(["worker", "tls://127.0.0.1:1"]) == 0
    both = tmp_path / "worker.pem"  # one file with the certificate and its key, as Dask allows
    both.write_text(open(tls.cert).read() + open(tls.key).read())
    with dask.config.set({"distributed.comm.tls.ca-file": tls.ca, "distributed.comm.tls.worker.cert": str(both)}):
        assert main(["worker", "tls://127.0.0.1:1"]) == 0
    with dask.config.set({"distributed.comm.tls.ca-file": tls.ca, "distributed.comm.tls.worker.cert": tls.cert}):
        assert main(["worker", "tls://127.0.0.1:1"]) == 2  # a certificate without its key
    assert capsys.readouterr().err.endswith("Dask's config distributed.comm.tls.worker.key\n")
    assert main(["worker", "tls://127.0.0.1:1", *tls.worker_flags()]) == 0
    assert [c[2:] for c in started] == [["tls://127.0.0.1:1", "--nthreads", "1", "--no-dashboard"]] * 2 + \
        [["tls://127.0.0.1:1", "--nthreads", "1", "--no-dashboard", *tls.worker_flags()]]


@pytest.mark.slow  # a scheduler and a worker of their own (~10 s)
def test_a_worker_with_only_dasks_worker_tls_config_joins_a_tls_scheduler(tmp_path):
    """Dask's CA file and *worker* certificate and key, from the environment as `dask worker` reads
    them (no client keys, no flags): `xmdata worker tls://…` is not refused and its worker joins."""
    from distributed import Client

    from xmdata.runtime.prefect_api import free_port, stop_process_group

    tls = new_dask_credentials().write(str(tmp_path / "tls"))
    port = free_port()
    address = f"tls://127.0.0.1:{port}"
    env = {k: v for k, v in os.environ.items() if not k.startswith("DASK_")}
    worker_env = {**env, "DASK_DISTRIBUTED__COMM__TLS__CA_FILE": tls.ca,
                  "DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT": tls.cert, "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY": tls.key}
    with open(tmp_path / "scheduler.log", "wb") as scheduler_log, open(tmp_path / "worker.log", "wb") as worker_log:
        scheduler = subprocess.Popen([os.path.join(os.path.dirname(sys.executable), "dask"), "scheduler", "--host",
                                      "127.0.0.1", "--port", str(port), "--no-dashboard", *tls.worker_flags()],
                                     env=env, stdout=scheduler_log, stderr=subprocess.STDOUT, start_new_session=True)
        worker = subprocess.Popen([XMDATA, "worker", address], env=worker_env, stdout=worker_log,
                                  stderr=subprocess.STDOUT, start_new_session=True)
        try:
            with Client(address, security=tls.security(), timeout=60, set_as_default=False) as client:
                client.wait_for_workers(1, timeout=120)
                workers = list(client.scheduler_info(n_workers=-1)["workers"])
            assert worker.poll() is None, (tmp_path / "worker.log").read_text()[-2000:]
            assert len(workers) == 1 and workers[0].startswith("tls://127.0.0.1:")
        finally:
            stop_process_group(worker)
            stop_process_group(scheduler)

INTRUDER = textwrap.dedent('''
    import base64, json, os, socket, ssl, sys, urllib.error, urllib.request
    state = json.loads(sys.argv[1])
    found = {}
    try:
        open(os.path.join(state["secrets"], "key.pem")).read()
        found["read_key"] = True
    except OSError:
        found["read_key"] = False
    try:
        os.listdir(os.path.dirname(state["secrets"]))
        found["list_state_folder"] = True
    except OSError:
        found["list_state_folder"] = False
    host, port = state["dask_address"].split("://")[1].rsplit(":", 1)
    def plain():
        with socket.create_connection((host, int(port)), timeout=5) as s:
            s.sendall(b"\\0" * 64)
            return bool(s.recv(1))
    def tls():
        c = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT); c.check_hostname = False; c.verify_mode = ssl.CERT_NONE
        with socket.create_connection((host, int(port)), timeout=5) as raw, c.wrap_socket(raw) as s:
            s.sendall(b"\\0" * 8)
            return bool(s.recv(1))
    for name, talk in (("scheduler_plain", plain), ("scheduler_tls_without_certificate", tls)):
        try:
            found[name] = talk()
        except Exception:
            found[name] = False
    def status(path, method="GET"):
        r = urllib.request.Request(state["prefect_api_url"] + path, method=method,
                                   data=b"{}" if method == "POST" else None, headers={"Content-Type": "application/json"})
        try:
            return urllib.request.urlopen(r, timeout=10).status
        except urllib.error.HTTPError as e:
            return e.code
    found["flows_filter"] = status("/flows/filter", "POST")
    found["health"] = status("/health")
    try:  # the command process's socket (command_server.py), in the same 0700 folder
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(5)
            s.connect(os.path.join(state["secrets"], "commands.sock"))
            s.sendall(b"\\0" * 8)
            found["command_socket"] = bool(s.recv(1))
    except OSError:
        found["command_socket"] = False
    print(json.dumps(found))
''')


def test_a_second_account_on_this_machine_is_refused(service):
    """The issue's reproduction, as another local user: nothing to read, nothing that talks."""
    if os.geteuid() != 0 or not shutil.which("useradd"):
        skip_unless_required("needs root and useradd to make a second account", REQUIRE_ROOT_TESTS)
    name = "xmdata-intruder"
    try:
        pwd.getpwnam(name)
    except KeyError:
        made = subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                              capture_output=True, text=True)
        if made.returncode != 0:
            skip_unless_required(f"useradd failed: {made.stderr.strip()}", REQUIRE_ROOT_TESTS)
    user = pwd.getpwnam(name)

    def as_intruder():
        os.setgroups([])
        os.setgid(user.pw_gid)
        os.setuid(user.pw_uid)

    # The stdlib is all it uses: a system Python the other account can run (root's pyenv it cannot).
    def runs(python):
        try:
            return subprocess.run([python, "-c", "pass"], preexec_fn=as_intruder, cwd="/").returncode == 0
        except OSError:
            return False

    pythons = [p for p in ("/usr/bin/python3", "/usr/local/bin/python3", sys.executable) if os.path.exists(p) and runs(p)]
    if not pythons:
        skip_unless_required(f"no Python that {name} may run", REQUIRE_ROOT_TESTS)
    python = pythons[0]
    from xmdata.service.service import service_target

    state = {**service, "dask_address": service_target(service).address}  # the fixture's is from before it was up
    run = subprocess.run([python, "-I", "-c", INTRUDER, json.dumps(state)], capture_output=True, text=True,
                         timeout=120, preexec_fn=as_intruder, cwd="/", env={"PATH": os.environ["PATH"]})
    assert run.returncode == 0, run.stderr[-2000:]
    found = json.loads(run.stdout)
    assert found == {"read_key": False, "list_state_folder": False, "scheduler_plain": False,
                     "scheduler_tls_without_certificate": False, "flows_filter": 401, "health": 200,
                     "command_socket": False}, found


def http_status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=10) as r:
            return r.status
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("dashboard", [False, True])
def test_the_dashboard_is_off_unless_asked_for_and_then_on_loopback_only(dashboard):
    """Off: the scheduler's and workers' HTTP servers answer /health and nothing else (no metrics,
    task names or proxy to the workers). On: the dashboard's pages, on 127.0.0.1 alone."""
    from xmdata.runtime.cluster import close_local_cluster, start_local_cluster

    cluster, client = start_local_cluster(1, dashboard=dashboard)
    try:
        http = cluster.scheduler.http_server
        host, port = http.address, http.port  # where Dask says its HTTP server listens
        assert host == "127.0.0.1" and cluster.scheduler_address.startswith("tls://")
        base = f"http://127.0.0.1:{port}"
        assert http_status(base + "/health") == 200
        pages = [http_status(base + path) for path in ("/metrics", "/info/main/workers.html", "/json/counts.json")]
        assert (all(code == 200 for code in pages) if dashboard else all(code == 404 for code in pages)), pages
        assert http_status(base + "/status") == (200 if dashboard else 404)
        worker_ports = client.run(lambda dask_worker: dask_worker.http_server.port if dask_worker.http_server else None)
        for port in worker_ports.values():
            assert port is None or http_status(f"http://127.0.0.1:{port}/metrics") == 404 or dashboard
    finally:
        close_local_cluster(cluster, client)
