"""Inputs and outputs on a real S3 server (SeaweedFS on 127.0.0.1): same bytes as a local build,
resume through completion records, a killed upload never seen half, bad stores refused up front."""
import hashlib
import json
import os
import signal
import subprocess
import time

import pytest
from support.cli_in_process import run_xmdata
from support.demo_release import BIN

from xmdata.cli import main
from xmdata.data import sample_path

XMDATA = os.path.join(BIN, "xmdata")
VOLATILE = {"run.json", "prefect-server.log"}


def xmdata(env, *args, timeout=300):
    return run_xmdata([*args, "-q"], env)  # in this process: what a build writes is the point


def local_files(root) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in root.rglob("*")
            if p.is_file() and p.name not in VOLATILE}


def s3_files(s3, prefix: str) -> dict[str, bytes]:
    fs = s3.filesystem()
    return {p[len(prefix) + 1:]: fs.cat_file(p) for p in fs.find(prefix)
            if os.path.basename(p) not in VOLATILE}


@pytest.fixture(scope="module")
def local_lid(cli_env, tmp_path_factory):
    """identify-language of the sample captions on local disk: the bytes every S3 run must match."""
    out = tmp_path_factory.mktemp("lid-local")
    result = xmdata(cli_env, "identify-language", sample_path("captions.jsonl"), "--out", str(out),
                    "--shards", "3")
    assert result.returncode == 0, result.stderr[-2000:]
    return local_files(out)


@pytest.mark.slow  # two CLI builds and a local one: ~25 s
def test_s3_input_and_output_give_the_local_bytes_and_resume(s3, s3_env, local_lid):
    s3.filesystem().put(sample_path("captions.jsonl"), "xmdata/inputs/captions.jsonl")
    args = ["identify-language", "s3://xmdata/inputs/captions.jsonl", "--out", "s3://xmdata/lid", "--shards", "3"]
    first = xmdata(s3_env, *args)
    assert first.returncode == 0, first.stderr[-2000:]
    assert s3_files(s3, "xmdata/lid") == local_lid
    again = run_xmdata(args, s3_env)
    assert "language_id: 0 shard(s) run, 3 skipped" in again.stdout  # the records on S3 are trusted
    assert json.loads(s3.filesystem().cat_file("xmdata/lid/run.json"))["language_id"]["shards_skipped"] == 3


@pytest.mark.slow
def test_a_shard_whose_record_was_lost_is_redone_and_a_changed_object_is_not_trusted(s3, s3_env, local_lid):
    fs = s3.filesystem()
    args = ["identify-language", sample_path("captions.jsonl"), "--out", "s3://xmdata/lid-edit", "--shards", "3"]
    assert xmdata(s3_env, *args).returncode == 0
    fs.rm_file("xmdata/lid-edit/language_id/_done/shard-00001.json")  # as if killed before the record
    fs.pipe_file("xmdata/lid-edit/language_id/data/shard-00002.parquet", b"not the recorded object")
    rerun = run_xmdata(args, s3_env)
    assert "language_id: 2 shard(s) run, 1 skipped" in rerun.stdout, rerun.stderr[-2000:]
    assert s3_files(s3, "xmdata/lid-edit") == local_lid


class HangingUp:
    """An endpoint on 127.0.0.1 that accepts each connection and closes it unanswered, counting them."""

    def __init__(self):
        import socket
        import threading

        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:  # closed
                return
            self.connections += 1
            connection.close()

    def close(self):
        self.listener.close()


@pytest.mark.parametrize("case", ["unreachable endpoint", "endpoint hanging up", "missing bucket",
                                  "missing credentials", "unknown scheme", "filesystem not installed"])
def test_an_unusable_store_is_refused_in_one_line_before_anything_starts(case, s3, tmp_path, monkeypatch, capsys):
    from xmdata.runtime.prefect_api import free_port

    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    for name in ("AWS_SHARED_CREDENTIALS_FILE", "AWS_CONFIG_FILE"):  # no developer's ~/.aws
        monkeypatch.setenv(name, str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    out, expected, hanging_up = "s3://xmdata/refused", "", None
    if case == "endpoint hanging up":
        hanging_up = HangingUp()
        monkeypatch.setenv("AWS_ENDPOINT_URL", hanging_up.url)
        expected = f"cannot reach {hanging_up.url} ("
    elif case == "unreachable endpoint":
        monkeypatch.setenv("AWS_ENDPOINT_URL", f"http://127.0.0.1:{free_port()}")
        expected = "cannot reach http://127.0.0.1:"
    elif case == "missing bucket":
        out, expected = "s3://no-such-bucket/run", "bucket 'no-such-bucket' does not exist"
    elif case == "missing credentials":
        monkeypatch.delenv("AWS_ACCESS_KEY_ID")
        monkeypatch.delenv("AWS_SECRET_ACCESS_KEY")
        expected = "no credentials"
    elif case == "unknown scheme":
        out, expected = "nosuchfs://bucket/run", "no filesystem installed for nosuchfs://"
    else:
        out, expected = "gs://bucket/run", "no filesystem installed for gs:// (Please install gcsfs"
    assert main(["identify-language", sample_path("captions.jsonl"), "--out", out]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1 and "Traceback" not in err
    if hanging_up:  # no retry loop: botocore's one attempt (s3fs's defaults made 10, a retrying
        hanging_up.close()  # client 4); aiohttp may re-send once a GET whose connection closed unanswered
        assert hanging_up.connections <= 2  # (RFC 9112 allows it; its own choice, not pinned here)
    assert not s3.filesystem().exists("xmdata/refused")


def test_a_missing_input_object_is_refused_naming_it(s3, monkeypatch, capsys):
    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    assert main(["validate", "s3://xmdata/inputs/absent.jsonl"]) == 2
    assert "s3://xmdata/inputs/absent.jsonl: not found" in capsys.readouterr().err


@pytest.mark.slow
def test_a_run_killed_mid_upload_leaves_only_whole_recorded_shards_and_resumes(s3, s3_env, tmp_path, cli_env):
    """SIGKILL while shards are being uploaded: every record on the store describes objects that
    are there whole (their sha256 matches), and the rerun finishes the rest, byte for byte."""
    rows = [{"id": f"row-{i:05d}", "text": f"Sentence number {i} about a red bicycle in the park."}
            for i in range(20_000)]
    captions = tmp_path / "captions.jsonl"
    captions.write_text("".join(json.dumps(r) + "\n" for r in rows))
    local = tmp_path / "local"
    assert xmdata(cli_env, "identify-language", str(captions), "--out", str(local), "--shards", "24").returncode == 0
    fs = s3.filesystem()
    args = [XMDATA, "identify-language", str(captions), "--out", "s3://xmdata/killed", "--shards", "24", "-q"]
    proc = subprocess.Popen(args, env=s3_env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not fs.exists("xmdata/killed/language_id/_done/shard-00002.json"):
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended before it could be killed"
        time.sleep(0.02)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    # Run by the service's command process, the command is a fork there, killed when its client's
    # connection closes — a few milliseconds after the client: the records are read once it is gone.
    time.sleep(0.5)
    records = fs.find("xmdata/killed/language_id/_done")
    assert 0 < len(records) < 24
    for path in records:
        record = json.loads(fs.cat_file(path))
        data = path.replace("/_done/", "/data/").replace(".json", ".parquet")
        assert hashlib.sha256(fs.cat_file(data)).hexdigest() == record["output_sha256"]
    rerun = run_xmdata(args[1:-1], s3_env)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert f"language_id: {24 - len(records)} shard(s) run, {len(records)} skipped" in rerun.stdout
    assert s3_files(s3, "xmdata/killed") == local_files(local)


@pytest.mark.slow
def test_workers_sharing_only_the_store_and_the_scheduler_build_the_local_bytes(s3, s3_env, local_lid, tmp_path):
    """Dask workers each started in an empty folder of their own, with an environment holding only
    PATH, the AWS variables and Dask's TLS config: no shared disk, no shared cache, no shared home;
    the scheduler speaks mutual TLS only."""
    from distributed import Client

    from xmdata.runtime.owner_only import new_dask_credentials
    from xmdata.runtime.prefect_api import free_port, stop_process_group

    tls = new_dask_credentials("test-store").write(str(tmp_path / "tls"))
    dask_tls = {"DASK_DISTRIBUTED__COMM__TLS__CA_FILE": tls.ca, "DASK_DISTRIBUTED__COMM__TLS__WORKER__CERT": tls.cert,
                "DASK_DISTRIBUTED__COMM__TLS__WORKER__KEY": tls.key}  # Dask's own config, as a user sets it
    address = f"tls://127.0.0.1:{free_port()}"
    procs = [subprocess.Popen([os.path.join(BIN, "dask"), "scheduler", "--host", "127.0.0.1", "--port",
                               address.rsplit(":", 1)[1], "--protocol", "tls", "--no-dashboard",
                               *tls.worker_flags()], env=s3_env, start_new_session=True, stderr=subprocess.DEVNULL)]
    try:
        for i in range(2):
            home = tmp_path / f"worker-{i}"
            home.mkdir()
            env = {"PATH": os.environ["PATH"], "HOME": str(home), **s3.env(), **dask_tls}
            procs.append(subprocess.Popen(
                [os.path.join(BIN, "dask"), "worker", address, "--nthreads", "1", "--no-dashboard",
                 "--host", "127.0.0.1", "--local-directory", str(home / "dask")],
                cwd=home, env=env, start_new_session=True, stderr=subprocess.DEVNULL))
        with Client(address, security=tls.security(), timeout=60) as client:
            client.wait_for_workers(2, timeout=120)
            s3.filesystem().put(sample_path("captions.jsonl"), "xmdata/inputs/shared.jsonl")
            run = xmdata(s3_env, "identify-language", "s3://xmdata/inputs/shared.jsonl", "--out",
                         "s3://xmdata/lid-workers", "--shards", "3", "--dask-address", address,
                         "--executor", "dask", *tls.worker_flags())
            assert run.returncode == 0, run.stderr[-2000:]
            ran_on = client.run(lambda: __import__("os").getcwd())
        assert s3_files(s3, "xmdata/lid-workers") == local_lid
        assert json.loads(s3.filesystem().cat_file("xmdata/lid-workers/run.json"))["language_id"]["where"] == "cluster"
        assert sorted(ran_on.values()) == sorted(str(tmp_path / f"worker-{i}") for i in range(2))
        assert not any((tmp_path / f"worker-{i}" / "language_id").exists() for i in range(2))
    finally:
        for proc in reversed(procs):
            stop_process_group(proc)


def test_images_in_an_object_store_are_confined_to_their_root(s3, monkeypatch):
    import io

    from PIL import Image

    from xmdata.tasks.build.image_decode import ImageRef, open_image

    for name, value in s3.env().items():
        monkeypatch.setenv(name, value)
    png = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(png, format="PNG")
    fs = s3.filesystem()
    fs.pipe_file("xmdata/images/a.png", png.getvalue())
    fs.pipe_file("xmdata/secret.png", png.getvalue())
    root = "s3://xmdata/images"

    def reason(path):
        opened = open_image(ImageRef(path=path), root, max_pixels=100)
        return getattr(opened, "reason", None) or opened.size

    assert reason("a.png") == (4, 3)
    assert reason("s3://xmdata/images/a.png") == (4, 3)  # an absolute URL inside the root
    for escaping in ("../secret.png", "/xmdata/secret.png", "s3://xmdata/secret.png",
                     "gs://xmdata/images/a.png", "images/../../secret.png"):
        assert reason(escaping) == "path_outside_root", escaping
    assert reason("absent.png") == "missing_image"
