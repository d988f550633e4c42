"""Faults of the environment end in one line and lose nothing (docs/explanation/reliability.md):
a full disk at the output, the memo and the cache, injected at the writes (everywhere) and met for real
on a size-limited tmpfs (as root)."""
from __future__ import annotations

import errno
import os
import pickle
import random
import string
import subprocess
import sys

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from support.cli_in_process import run_xmdata

from xmdata.exit_codes import OUT_OF_SPACE
from xmdata.runtime import atomic, memo
from xmdata.runtime.faults import OutOfSpace, is_out_of_space

BIN = os.path.dirname(sys.executable)


def captions(path, rows: int, seed: int = 0) -> str:
    """Texts of random letters: they barely compress, so their shards fill a small disk."""
    r = random.Random(seed)
    texts = [" ".join("".join(r.choice(string.ascii_lowercase) for _ in range(r.randint(3, 9))) for _ in range(20))
             for _ in range(rows)]
    pq.write_table(pa.table({"id": [f"r{i}" for i in range(rows)], "text": texts}), path)
    return str(path)


def full_at(monkeypatch, where):
    """Every atomic write whose target path `where(path)` picks fails as a full disk does."""
    real = atomic._replace_in

    def write(folder, path, *args, **kwargs):
        if where(path):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(folder, path, *args, **kwargs)

    monkeypatch.setattr(atomic, "_replace_in", write)


def skipped(stdout: str) -> int:
    """The shards a command took as finished, from its lines `STAGE: N shard(s) run, M skipped …`."""
    return sum(int(line.split(" skipped")[0].rsplit(", ", 1)[1]) for line in stdout.splitlines()
               if " shard(s) run, " in line)


def finished(out) -> int:
    from xmdata.faults import finished_shards

    return finished_shards(str(out)) or 0


def test_a_full_output_ends_in_one_line_naming_the_folder_and_the_rerun_resumes(cli_env, tmp_path, monkeypatch):
    source, out = captions(tmp_path / "in.parquet", 400), tmp_path / "out"
    full_at(monkeypatch, lambda path: "language_id" in path and "shard-00003" in path)
    result = run_xmdata(["identify-language", source, "--out", out, "--shards", "6", "-q"], cli_env)
    assert result.returncode == OUT_OF_SPACE
    lines = [line for line in result.stderr.splitlines() if line.startswith("xmdata:")]
    assert lines == [f"xmdata: error: out of space: {out}/language_id/data: No space left on device; kept: "
                     f"{finished(out)} finished shard(s) in {out}, with the memo's stored entries; the same "
                     f"command resumes from them once space is freed there"], result.stderr
    assert finished(out) == 6 + 3 and "Traceback" not in result.stderr  # the captions' six, language_id's 0-2
    assert not [n for _, _, names in os.walk(out) for n in names if n.startswith(".tmp-")]  # nothing half-written

    monkeypatch.undo()
    again = run_xmdata(["identify-language", source, "--out", out, "--shards", "6"], cli_env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert "language_id: 3 shard(s) run, 3 skipped (already finished) of 6" in again.stdout


def test_a_memo_that_fills_mid_run_stops_being_written_says_so_once_and_the_shards_go_on(tmp_path, monkeypatch, caplog):
    """The disk full under the memo after its first entry file (the OutOfSpace the atomic writer
    raises is an OSError the memo catches): served what it has, not written, said once."""
    import skimage.data

    from support.memo_runs import run_shard
    from xmdata.tasks.clean.inputs import RESOLVED
    from xmdata.tasks.clean.params import CleanParams
    from xmdata.tasks.clean.signatures import HASH_MEMO_KIND, signature_stage

    paths = [os.path.join(os.path.dirname(skimage.data.__file__), n) for n in ("astronaut.png", "coffee.png", "rocket.jpg")]
    table = pa.table({"id": ["a", "b", "c"], "path": paths, RESOLVED: paths})
    stage, location = signature_stage("images", CleanParams(), None), str(tmp_path / "memo")
    assert run_shard(stage, table.slice(0, 1), location)[2] == {HASH_MEMO_KIND: {"computed": 1, "stored": 1}}
    full_at(monkeypatch, lambda path: path.startswith(location))
    command = memo.MemoOptions(location)  # two shards of one command: said once
    with caplog.at_level("WARNING", logger="xmdata.memo"):
        kept, _, counts = run_shard(stage, table, command)
        assert run_shard(stage, table, command)[2] == {HASH_MEMO_KIND: {"served": 1, "computed": 2}}
    assert counts == {HASH_MEMO_KIND: {"served": 1, "computed": 2}} and kept.num_rows == 3
    said = [r.getMessage() for r in caplog.records if r.name == "xmdata.memo"]
    assert said == [f"memo {location}: the disk is full; its entries are read, new results are not stored"]


def test_a_full_cache_is_named_and_the_error_keeps_its_folder_across_processes(tmp_path, monkeypatch):
    """A cache record's write (XMDATA_CACHE) on a full disk: OutOfSpace naming its folder, which a
    Dask worker's pickled error keeps on its way to the client."""
    from xmdata.faults import out_of_space_line
    from xmdata.runtime.cache_records import write_cache_record

    monkeypatch.setenv("XMDATA_CACHE", str(tmp_path / "cache"))
    full_at(monkeypatch, lambda path: True)
    with pytest.raises(OutOfSpace) as raised:
        write_cache_record("platform", "torch-x", {"a": 1})
    assert raised.value.folder == str(tmp_path / "cache" / "platform") and is_out_of_space(raised.value)
    back = pickle.loads(pickle.dumps(raised.value))
    assert (type(back), back.errno, back.folder) == (OutOfSpace, errno.ENOSPC, raised.value.folder)
    assert out_of_space_line(back, None).startswith(f"out of space: {tmp_path}/cache/platform: No space left")
    assert not os.listdir(tmp_path / "cache" / "platform")  # no temp file left behind


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (root only: mount needs CAP_SYS_ADMIN), unmounted after."""
    if os.geteuid() != 0:
        pytest.skip("a real full disk needs root to mount a size-limited tmpfs; the injected tests cover the rest")
    folder = tmp_path / "small"
    folder.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(folder)], capture_output=True, text=True)
    if made.returncode:
        pytest.skip(f"mount -t tmpfs refused here ({made.stderr.strip()}): the injected tests cover the rest")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_real_full_disk_ends_in_one_line_without_a_traceback_and_the_rerun_resumes(cli_env, tmp_path, small_disk):
    """The command as a user runs it (its own process, the service's Prefect server): no traceback from
    xmdata or from Prefect's flow engine on the terminal; after the disk grows, the rerun resumes."""
    source, out = captions(tmp_path / "in.parquet", 8_000), small_disk / "out"
    command = [os.path.join(BIN, "xmdata"), "identify-language", source, "--out", str(out), "--shards", "8"]
    full = subprocess.run([*command, "-q"], env=cli_env, capture_output=True, text=True)
    assert full.returncode == OUT_OF_SPACE, full.stderr[-3000:]
    assert f"xmdata: error: out of space: {out}" in full.stderr
    assert [line for line in full.stderr.splitlines() if line.strip()] == [
        line for line in full.stderr.splitlines() if line.startswith("xmdata: error: out of space")]  # one line
    kept = finished(out)
    assert kept >= 1 and f"kept: {kept} finished shard(s) in {out}" in full.stderr

    subprocess.run(["mount", "-o", "remount,size=32m", str(small_disk)], check=True)
    again = subprocess.run(command, env=cli_env, capture_output=True, text=True)
    assert again.returncode == 0, again.stderr[-3000:]
    assert skipped(again.stdout) == kept  # every shard finished before the disk filled, taken as it was


def allocates(table, params):
    """Holds `mib` MiB, touched, on the victim shard: over a small worker's memory limit."""
    import numpy as np

    from xmdata.tasks.build.rejects import no_rejects

    if table.column("id")[0].as_py().startswith(params["victim"] + "-"):
        held = np.ones(params["mib"] << 20, dtype=np.uint8)
        import time

        time.sleep(5)  # the nanny's monitor (every 100 ms) sees it and kills the worker first
        del held
    return table, no_rejects()


def test_a_stage_over_the_workers_memory_limit_is_named_with_the_limit_and_the_knobs(tmp_path):
    """A real LocalCluster with a 400 MiB worker and a shard that takes 700 MiB: the nanny kills the
    worker (Dask's memory `terminate` threshold), the scheduler gives up on the task after its allowed
    failures (one death here, to keep it cheap), and the stage fails in one line; the other shard is kept."""
    import dask
    import distributed  # noqa: F401 — its config defaults first

    from test_execution import write_shards
    from xmdata.runtime.cluster_spec import ClusterOptions
    from xmdata.runtime.execution import ShardsFailed, run_stage
    from xmdata.runtime.session import execution_session
    from xmdata.runtime.stage import Stage

    small = ClusterOptions(cluster_class="distributed.LocalCluster",
                           cluster_kwargs={"n_workers": 1, "threads_per_worker": 1, "memory_limit": "400MiB"})
    out = str(tmp_path / "out")
    with dask.config.set({"distributed.scheduler.allowed-failures": 0}):
        with execution_session("dask", cluster=small) as session:
            session.client()
            with pytest.raises(ShardsFailed) as failed:
                run_stage(Stage("allocating", "1", allocates, {"victim": "s1", "mib": 700}), write_shards(tmp_path, 2), out)
    assert failed.value.failed.keys() == {1}
    assert str(failed.value).startswith(
        "stage allocating: 1 shard(s) failed — shard-00001: its workers died running it, again after Dask's retries "
        "(KilledWorker): over the worker's memory limit (400.00 MiB) or crashed; give a worker more memory "
        "(fewer --workers, or memory_limit= in --cluster-kwargs) or the shard less work (more --shards, or the stage's "
        "smaller batch size). Finished shards are kept")
    assert os.path.exists(os.path.join(out, "allocating", "_done", "shard-00000.json"))


def test_a_prefect_server_gone_mid_run_stops_the_build_in_one_line_and_the_rerun_resumes(cli_env, service, tmp_path):
    """A Prefect server the command was pointed at (PREFECT_API_URL, as beside --dask-address) gone once
    the first shards are finished: the service's real server behind a proxy the test closes (every
    connection cut, the port refusing; its process killed is the same to the client, and is measured on
    the faults page). The command ends in one line with SERVER_LOST after XMDATA_PREFECT_LOST_SECONDS
    without an answer (1 s here), its finished shards on disk; the same command resumes from them."""
    import time
    from urllib.parse import urlsplit

    from support.tcp_proxy import TcpProxy
    from xmdata.exit_codes import SERVER_LOST
    from xmdata.service.service import prefect_auth

    real = urlsplit(service["prefect_api_url"])
    proxy = TcpProxy(real.hostname, real.port)
    url = f"http://127.0.0.1:{proxy.port}/api"
    source, out = captions(tmp_path / "in.parquet", 1000), tmp_path / "out"
    env = {**cli_env, "XMDATA_SERVICE": "off", "PREFECT_API_URL": url, "PREFECT_API_AUTH_STRING": prefect_auth(service),
           "XMDATA_PREFECT_LOST_SECONDS": "1"}
    command = [os.path.join(BIN, "xmdata"), "identify-language", source, "--out", str(out), "--shards", "60", "-q"]
    run = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not os.path.isdir(out / "language_id" / "_done") and run.poll() is None:
            time.sleep(0.05)
    finally:
        proxy.close()
    _, stderr = run.communicate(timeout=120)
    assert run.returncode == SERVER_LOST, stderr[-3000:]
    kept = finished(out)
    assert [line for line in stderr.splitlines() if line.strip()] == [
        f"xmdata: error: the Prefect server {url} has not answered for 1 s: the build stopped; kept: {kept} "
        f"finished shard(s) in {out}, with the memo's stored entries; the same command resumes from them (the "
        f"service's server is started anew by the next command; one you named must be started again)"], stderr
    again = run_xmdata(command[1:-1], cli_env)
    assert again.returncode == 0, again.stderr[-2000:]
    assert skipped(again.stdout) == kept  # every shard finished before the server went, taken as it was


SCHEDULER = """import time
from distributed import LocalCluster
cluster = LocalCluster(n_workers=1, threads_per_worker=1, processes=False, protocol="tcp://",
                       host="127.0.0.1", dashboard_address=None)
print(cluster.scheduler_address, flush=True)
time.sleep(600)
"""


def slow_shard(table, params):
    import time

    from xmdata.tasks.build.rejects import no_rejects

    time.sleep(params["seconds"])
    return table, no_rejects()


def test_a_scheduler_gone_mid_stage_stops_it_in_one_line_and_the_rerun_resumes(tmp_path):
    """A scheduler at an address (as --dask-address names one), its process killed with SIGKILL once
    the first shards are finished: the stage stops with SchedulerLost (the CLI's one line, SERVER_LOST)
    instead of Dask's 30 s of reconnecting and a ClosedClientError traceback; a rerun takes every
    finished shard as it is."""
    import threading
    import time

    from test_execution import write_shards
    from xmdata.runtime.execution import run_stage
    from xmdata.runtime.faults import SchedulerLost
    from xmdata.runtime.session import execution_session
    from xmdata.runtime.stage import Stage

    here = os.path.dirname(os.path.abspath(__file__))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([here, os.path.dirname(here)])}  # where slow_shard is
    scheduler = subprocess.Popen([sys.executable, "-c", SCHEDULER], env=env, stdout=subprocess.PIPE, text=True)
    address = scheduler.stdout.readline().strip()
    out, paths = tmp_path / "out", write_shards(tmp_path, 12)
    stage = Stage("slow", "1", slow_shard, {"seconds": 0.3})

    def kill_after_the_first_shards():
        while finished(out) < 2 and scheduler.poll() is None:
            time.sleep(0.05)
        scheduler.kill()

    killer = threading.Thread(target=kill_after_the_first_shards, daemon=True)
    killer.start()
    try:
        with execution_session("dask", address=address), pytest.raises(SchedulerLost) as lost:
            run_stage(stage, paths, str(out))
    finally:
        scheduler.kill()
        scheduler.wait()
    assert str(lost.value) == f"the Dask scheduler {address} went away during stage slow"
    kept = finished(out)
    assert 2 <= kept < 12
    with execution_session("inprocess"):
        report = run_stage(stage, paths, str(out))
    assert (report.shards_skipped, report.shards_run) == (kept, 12 - kept)


def test_an_object_store_gone_mid_stage_stops_it_in_one_line_and_the_rerun_resumes(tmp_path):
    """The test S3 server (SeaweedFS) stopped once the first shards are up: each request is tried again
    with botocore's backoff (5 tries by default; 2 here), then the stage stops with StoreUnreachable (the CLI's
    one line, SERVER_LOST) rather than every shard failing after its own retries; the server started
    again on the same data, the rerun takes every finished shard as it is."""
    import threading
    import time

    from support.s3_server import start_s3_server
    from test_execution import write_shards
    from xmdata.runtime import storage
    from xmdata.runtime.execution import run_stage
    from xmdata.runtime.faults import StoreUnreachable
    from xmdata.runtime.session import execution_session
    from xmdata.runtime.stage import Stage

    with storage.using_storage_options({"endpoint_url": "http://127.0.0.1:9"}):  # the default: 5 tries, with backoff
        assert storage.filesystem("s3://xmdata/x")[0].config_kwargs["retries"] == {"max_attempts": 5, "mode": "standard"}
    data = str(tmp_path / "s3")
    server = start_s3_server(data)
    server.filesystem().mkdir("xmdata")
    paths, stage = write_shards(tmp_path, 10), Stage("slow", "1", slow_shard, {"seconds": 0.2})

    def records(fs) -> int:
        try:
            return len([p for p in fs.ls("xmdata/out/slow/_done", detail=False) if p.endswith(".json")])
        except FileNotFoundError:
            return 0

    def stop_after_the_first_shards():
        fs = server.filesystem()
        while records(fs) < 2:
            time.sleep(0.1)
        server.stop()

    # Two tries, not the default five, to keep CI short; the default is checked on its own below.
    retries = {"retries": {"max_attempts": 2, "mode": "standard"}, "connect_timeout": 2, "read_timeout": 5}

    def run(endpoint: str):
        options = {"endpoint_url": endpoint, "key": "xmdata-test-key", "secret": "xmdata-test-secret",
                   "config_kwargs": retries}
        with execution_session("inprocess"), storage.using_storage_options(options):
            return run_stage(stage, paths, "s3://xmdata/out")

    stopper = threading.Thread(target=stop_after_the_first_shards, daemon=True)
    stopper.start()
    try:
        with pytest.raises(StoreUnreachable) as gone:
            run(server.endpoint)
        said = str(gone.value)  # refused once it is down; a 500 from its gateway while it stops
        assert said.startswith(("the object store did not answer after its retries (EndpointConnectionError:",
                                "the object store did not answer after its retries (ClientError:")), said
        server = start_s3_server(data)  # the same data, on new ports
        kept = records(server.filesystem())
        assert 2 <= kept < 10
        report = run(server.endpoint)
        assert (report.shards_skipped, report.shards_run) == (kept, 10 - kept)
    finally:
        server.stop()
