"""Cluster managers named, not coded: any distributed cluster class with kwargs and adapt, from the
CLI, a release config or a deployment parameter; distributed.LocalCluster stands in for SLURM."""
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from support.cli_in_process import run_xmdata

from xmdata.cli import main
from xmdata.data import sample_path
from xmdata.runtime.cluster_spec import ClusterOptions, cluster_options
from xmdata.runtime.session import ExecutionSession


def upper(table, params):
    import pyarrow.compute as pc

    from xmdata.tasks.build.rejects import no_rejects

    return table.set_column(1, "text", pc.utf8_upper(table.column("text"))), no_rejects()


def test_a_named_cluster_class_is_built_with_its_kwargs_adapts_and_runs_shards(tmp_path, monkeypatch):
    from distributed import LocalCluster

    from xmdata.runtime.dask_executor import DaskExecutor
    from xmdata.runtime.stage import Stage
    from xmdata.tasks.build.ingest import ingest

    options = cluster_options("distributed.LocalCluster", "n_workers=1,threads_per_worker=1,processes=false,"
                              "dashboard_address=127.0.0.1:0", "1:2")
    assert options == ClusterOptions(cluster_class="distributed.LocalCluster", adapt_minimum=1, adapt_maximum=2,
                                     cluster_kwargs={"n_workers": 1, "threads_per_worker": 1, "processes": False,
                                                     "dashboard_address": "127.0.0.1:0"})
    shards = ingest(pa.table({"id": ["a", "b", "c"], "text": ["x", "y", "z"]}), "rows", 2, str(tmp_path)).data_paths
    adapted, adapt = [], LocalCluster.adapt
    monkeypatch.setattr(LocalCluster, "adapt", lambda cluster, **bounds: adapted.append(bounds) or adapt(cluster, **bounds))
    session = ExecutionSession("dask", cluster=options)
    try:
        executor = session.executor_for(Stage("upper", "1", upper), 3, 2)
        assert isinstance(executor, DaskExecutor) and isinstance(session._cluster, LocalCluster)
        assert session._cluster.scheduler_address.startswith("tls://")  # the TLS of every cluster xmdata starts
        assert adapted == [{"minimum": 1, "maximum": 2}]
        outcomes = list(executor.run(Stage("upper", "1", upper), list(enumerate(shards)), str(tmp_path)))
        assert sorted(o["record"]["rows_out"] for _, o, _ in outcomes) == sorted(
            pq.read_metadata(p).num_rows for p in shards)
    finally:
        session.close()


@pytest.mark.parametrize("flags, expected", [
    (["--cluster", "nosuch_package.SLURMCluster"], "cannot import it"),
    (["--cluster", "distributed.LocalCluster", "--adapt", "4"], "expected MIN:MAX"),
    (["--cluster", "distributed.LocalCluster", "--cluster-kwargs", "cores"], "expected key=value"),
    (["--adapt", "0:4"], "need --cluster CLASS"),
])
def test_bad_cluster_flags_exit_2_in_one_line_before_anything_starts(flags, expected, tmp_path, capsys):
    assert main(["identify-language", sample_path("captions.jsonl"), "--out", str(tmp_path / "out"), *flags]) == 2
    err = capsys.readouterr().err
    assert expected in err and err.count("\n") == 1
    assert not (tmp_path / "out").exists()


def test_a_release_config_names_its_cluster_and_a_misspelt_key_is_refused(tmp_path):
    from xmdata.flows.release_config import load_release_config
    from xmdata.schemas.contract import ContractError

    config = tmp_path / "release.yaml"
    config.write_text(f"name: r\nlanguage_id: {{input: {sample_path('captions.jsonl')}}}\n"
                      "cluster: {cluster_class: dask_jobqueue.SLURMCluster, cluster_kwargs: {cores: 8, memory: 64GB},"
                      " adapt_minimum: 0, adapt_maximum: 20}\n")
    parsed = load_release_config(str(config))[0]
    assert parsed.cluster.cluster_kwargs == {"cores": 8, "memory": "64GB"} and parsed.cluster.adapt_maximum == 20
    config.write_text(config.read_text().replace("adapt_maximum", "adapt_max"))
    with pytest.raises(ContractError, match="cluster.adapt_max: Extra inputs are not permitted"):
        load_release_config(str(config))


@pytest.mark.slow
def test_the_cli_runs_a_build_on_a_named_cluster_class(cli_env, tmp_path):
    env = {**cli_env, "XMDATA_EXECUTOR": "dask"}
    run = run_xmdata(["identify-language", sample_path("captions.jsonl"), "--out", tmp_path, "--shards", "3", "-q",
                      "--cluster", "distributed.LocalCluster",
                      "--cluster-kwargs", "n_workers=1,threads_per_worker=1,dashboard_address=127.0.0.1:0",
                      "--adapt", "1:2"], env)
    assert run.returncode == 0, run.stderr[-2000:]
    timing = json.load(open(tmp_path / "run.json"))["language_id"]
    assert timing["where"] == "cluster" and timing["shards_run"] == 3


def test_what_a_cluster_class_gets_follows_from_what_its_constructor_takes():
    """dask-jobqueue's SLURMCluster takes job_script_prologue and log_directory through its job class
    (`job_cls`); LocalCluster takes neither. The prologue: the user's lines first (their kwargs', else
    Dask's config for the job class), then the non-daemonic worker, quiet logs (unless the user set
    DASK_LOGGING) and, told cores and processes, the worker's thread share."""
    import dask
    import dask_jobqueue
    from distributed import LocalCluster

    from xmdata.runtime.cluster_spec import JOB_PROLOGUE, job_prologue, takes

    slurm = takes(dask_jobqueue.SLURMCluster)
    assert {"security", "protocol", "job_script_prologue", "log_directory", "shared_temp_directory", "cores"} <= slurm
    assert not {"job_script_prologue", "log_directory"} & takes(LocalCluster)
    assert job_prologue(dask_jobqueue.SLURMCluster, {"cores": 8}) == list(JOB_PROLOGUE)  # processes: dask-jobqueue's
    with dask.config.set({"jobqueue.slurm.job-script-prologue": ["module load cuda"]}):
        lines = job_prologue(dask_jobqueue.SLURMCluster, {"cores": 8, "processes": 2})
    assert lines[0] == "module load cuda" and lines[1] == "export DASK_DISTRIBUTED__WORKER__DAEMON=False"
    assert lines[-1] == ("export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON='{\"OMP_NUM_THREADS\": 4, "
                         "\"MKL_NUM_THREADS\": 4, \"OPENBLAS_NUM_THREADS\": 4}'")
    own = job_prologue(dask_jobqueue.SLURMCluster, {"job_script_prologue": ["export DASK_LOGGING='{}'"]})
    assert own == ["export DASK_LOGGING='{}'", JOB_PROLOGUE[0]]


def reaches(host: str, port: int) -> bool:
    import socket

    try:
        socket.create_connection((host, port), timeout=2).close()
        return True
    except OSError:
        return False


@pytest.mark.parametrize("cluster_class, kwargs", [
    ("dask_jobqueue.local.LocalCluster", {"cores": 1, "memory": "1GB"}),  # a JobQueueCluster: its scheduler_options
    ("distributed.LocalCluster", {"n_workers": 0, "processes": False}),
])
@pytest.mark.parametrize("dashboard", [False, True])
def test_a_named_clusters_scheduler_serves_http_on_loopback_only_and_its_dashboard_when_asked(
        cluster_class, kwargs, dashboard, tmp_path):
    """Both classes' default dashboard_address is ":8787", every interface, and its pages are not
    authenticated: start_cluster puts the scheduler's HTTP server on 127.0.0.1 (unreachable at this
    host's network address), and its dashboard there with the session's --dashboard."""
    import urllib.request

    from distributed.utils import get_ip

    from xmdata.runtime.cluster_spec import start_cluster

    cluster, client = start_cluster(ClusterOptions(cluster_class=cluster_class, cluster_kwargs=kwargs),
                                    jobs_folder=str(tmp_path), dashboard=dashboard)
    try:
        port = client.scheduler_info()["services"]["dashboard"]
        assert reaches("127.0.0.1", port)
        network = get_ip()
        if network.startswith("127."):
            pytest.skip("this host has no address but loopback")
        assert not reaches(network, port), f"the scheduler's HTTP server answers on {network}:{port}"
        if dashboard:  # asked for: served, on loopback (without it, whether /status answers depends
            # on what an earlier scheduler in this process registered: not asserted here)
            assert urllib.request.urlopen(f"http://127.0.0.1:{port}/status", timeout=10).status == 200
    finally:
        client.close()
        cluster.close()


def test_a_flows_cluster_logs_its_jobs_under_the_flows_folder_unless_the_command_named_one(tmp_path):
    """A deployment run has no command to name a jobs folder: the flow's (a release's work folder) is
    used, not the worker's current folder; a command's own stays."""
    from xmdata.runtime.cluster_spec import JOBS_FOLDER
    from xmdata.runtime.session import cluster_scope, execution_session

    options = ClusterOptions(cluster_class="dask_jobqueue.SLURMCluster")
    with execution_session("dask"), cluster_scope(options, str(tmp_path / "build")) as session:
        assert session.cluster == options and session.jobs_folder == str(tmp_path / "build" / JOBS_FOLDER)
    with execution_session("dask", jobs_folder=str(tmp_path / "cli")), cluster_scope(options, str(tmp_path)) as session:
        assert session.jobs_folder == str(tmp_path / "cli")


def test_a_jobs_log_keeps_dasks_errors_and_drops_only_a_connection_that_ended(tmp_path):
    """A worker started by the job script's prologue (its DASK_LOGGING, as Dask reads it on import):
    an error of Dask's comm or tornado's stays in the log with its traceback; one whose exception is
    a connection that ended (CommClosedError, an SSL error, a reset) does not; info lines do not."""
    import subprocess
    import sys

    from xmdata.runtime.cluster_spec import JOB_PROLOGUE

    worker = tmp_path / "worker.py"
    worker.write_text('''import logging, ssl
import distributed
from distributed.comm.core import CommClosedError

def logged(name, error):
    try:
        raise error
    except BaseException:
        logging.getLogger(name).error("%s happened", type(error).__name__, exc_info=True)

logged("distributed.comm.tcp", CommClosedError("in <TLS (closed)>"))
try:
    raise ssl.SSLError(1, "APPLICATION_DATA_AFTER_CLOSE_NOTIFY")
except ssl.SSLError as cause:
    try:
        raise OSError("write failed") from cause
    except OSError as error:
        logged("asyncio", error)
logged("distributed.core", ConnectionResetError("reset by peer"))
logged("distributed.comm.tcp", ValueError("a real comm error"))
logged("tornado.application", KeyError("a real callback error"))
logging.getLogger("distributed.worker").info("Starting Worker plugin")
logging.getLogger("xmdata.tasks").info("decoding in 2 processes")
''')
    script = "\n".join([*JOB_PROLOGUE, f"{sys.executable} {worker}"])
    log = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120).stderr
    assert "ValueError: a real comm error" in log and "KeyError: 'a real callback error'" in log
    assert log.count("Traceback") == 2, log
    assert "decoding in 2 processes" in log and "Starting Worker plugin" not in log
    for ended in ("CommClosedError", "SSLError", "OSError", "ConnectionResetError"):
        assert ended not in log, log
