"""Any `distributed` cluster manager by name: SLURM (dask-jobqueue), Kubernetes (dask-kubernetes),
or anything else with the Cluster interface, started for a run and closed after it.

Declared once (`ClusterOptions`): the CLI's `--cluster CLASS --cluster-kwargs k=v,… --adapt MIN:MAX`,
a release config's `cluster:` section and the release deployment's `cluster` parameter are all
this model. No code knows any cluster class: it is imported by its dotted path when first needed.

What a class gets is decided by what its constructor takes (`takes`: its named parameters, and those
of the job class it passes its other keywords on to, dask-jobqueue's `job_cls`), never by its name:
- `security` and `protocol` (LocalCluster, dask-jobqueue's): the mutual TLS of every cluster xmdata
  starts (owner_only.py), unless its kwargs set their own; any other class's security is its own
  configuration's.
- `job_script_prologue` (a batch job's script): JOB_PROLOGUE after the user's own lines (their kwargs',
  else Dask's config for the job class): the job's worker is not daemonic, so the scoring stage's
  decoders run in processes (tasks/build/decoders.py), and a job cancelled or preempted mid-run
  says so in one line of its log, not in tracebacks of its broken connections.
- `scheduler_options` (dask-jobqueue's), else `dashboard_address` (LocalCluster's): the scheduler's
  HTTP server on 127.0.0.1, its dashboard only when the session asked (`--dashboard`), unless the
  user named an address; both classes' default, ":8787", is every interface, and its pages are not
  authenticated.
- `log_directory` and `shared_temp_directory`: the run's `_jobs/` folder (0700, in its summary
  folder: OUT, or a release's build folder), unless the user named one; the job logs and the TLS
  files the jobs read otherwise land in the folder the command started from.

A job class that submits with `sbatch` (SLURM's) is checked before any job is asked for: `squeue`
must answer (munge and slurmctld up) and `sbatch --test-only` must accept the job script (a
partition or account that does not exist); dask-jobqueue itself only logs a failed submit. Jobs with
no worker after `start_timeout_s` are cancelled and the queue's state said in one line.
"""
from __future__ import annotations

import importlib
import inspect
import os
import shlex
import subprocess
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from .job_logging import dask_logging
from .storage import key_values
from .worker_start import DAEMON

JOBS_FOLDER = "_jobs"  # OUT/_jobs (a release: OUT/build/_jobs): one log per job
# Dask's own settings, as environment variables in the job's script: the worker is not daemonic; its
# log holds Dask's warnings, Dask's, tornado's and asyncio's errors and xmdata's own lines ("decoding
# in N processes"), not the info lines of its start and close nor the traceback of each connection its
# end broke (job_logging.EndOfConnection): a job cancelled or preempted mid-run leaves one line,
# SLURM's `slurmstepd: error: *** JOB N … CANCELLED AT … ***`. A user's prologue that sets
# DASK_LOGGING keeps its own.
LOGGING_ENV = "DASK_LOGGING"
JOB_PROLOGUE = (
    "export DASK_" + DAEMON.upper().replace(".", "__").replace("-", "_") + "=False",
    f"export {LOGGING_ENV}=" + shlex.quote(repr(dask_logging())),  # a Python literal, as Dask reads its variables
)
THREAD_VARIABLES = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")  # Dask's nanny sets each to 1
# Asked of a batch queue before any job, keyed by the program its job class submits with (its
# `submit_command`): a command that must answer, and a dry run of the job script (read on stdin).
QUEUE_CHECKS = {"sbatch": {"answers": ["squeue", "--me", "-h", "-o", "%i"], "dry_run": ["sbatch", "--test-only"],
                           "state": ["squeue", "-h", "-o", "%i %T %r", "-j"]}}


class ClusterOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)  # a timeout of inf or NaN: refused

    cluster_class: str = Field(description="dotted path of a distributed cluster class, e.g. "
                               "dask_jobqueue.SLURMCluster, dask_kubernetes.operator.KubeCluster")
    cluster_kwargs: dict[str, Any] = Field(default_factory=dict, description="its constructor's arguments, "
                                           "e.g. {cores: 8, memory: 64GB}")
    adapt_minimum: int | None = Field(None, ge=0, description="adaptive scaling: fewest workers (or jobs)")
    adapt_maximum: int | None = Field(None, ge=1, description="adaptive scaling: most workers (or jobs)")
    start_timeout_s: float = Field(300.0, gt=0, description="seconds the first workers (adapt's MIN, or "
                                   "--workers) may take to join before their jobs are cancelled")



class ClusterUnavailable(RuntimeError):
    """A cluster manager's batch queue did not answer, or its first workers did not join in time: the
    environment's fault, not the input's (exit 1, in one line)."""


def refused(message: str) -> Exception:
    """A ContractError (exit 2), imported when raised: the contract imports pyarrow, and the CLI's
    flags read ClusterOptions' bounds while `xmdata --help` builds its parser."""
    from xmdata.schemas.contract import ContractError

    return ContractError(message)


def cluster_options(cluster: str | None, kwargs: str | None, adapt: str | None,
                    start_timeout: float | None = None) -> ClusterOptions | None:
    """The CLI's four flags as one ClusterOptions (None without --cluster); bad values exit 2."""
    if cluster is None:
        if kwargs or adapt or start_timeout is not None:
            raise refused("--cluster-kwargs, --adapt and --cluster-start-timeout need --cluster CLASS")
        return None
    low, sep, high = (adapt or "").partition(":")
    if adapt and not (sep and low.strip().isdigit() and high.strip().isdigit()):
        raise refused(f"--adapt {adapt!r}: expected MIN:MAX, e.g. 0:20")
    options = ClusterOptions(cluster_class=cluster,
                             cluster_kwargs=key_values([p for p in (kwargs or "").split(",") if p], "--cluster-kwargs"),
                             adapt_minimum=int(low) if adapt else None, adapt_maximum=int(high) if adapt else None,
                             **({} if start_timeout is None else {"start_timeout_s": start_timeout}))
    cluster_class(options)  # an unknown class stops the command here, before anything starts
    return options


def cluster_class(options: ClusterOptions):
    module, _, name = options.cluster_class.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise refused(f"cluster class {options.cluster_class!r}: cannot import it "
                      f"({type(exc).__name__}: {exc}); is its package installed?") from exc


def takes(cls) -> set[str]:
    """The keywords a cluster class takes: its constructor's named parameters, and, where it passes
    the others on to the class it builds each job with (its `job_cls`: dask-jobqueue's), that
    class's and its bases' while each passes them on."""
    def named(function) -> tuple[set[str], bool]:
        try:
            parameters = inspect.signature(function).parameters.values()
        except (TypeError, ValueError):
            return set(), False
        return ({p.name for p in parameters if p.kind not in (p.VAR_KEYWORD, p.VAR_POSITIONAL)},
                any(p.kind is p.VAR_KEYWORD for p in parameters))

    names, passes_on = named(cls)
    job = getattr(cls, "job_cls", None)
    if passes_on and inspect.isclass(job):
        for base in job.__mro__:
            if "__init__" in vars(base):
                more, passes_on = named(vars(base)["__init__"])
                names |= more - {"self"}
                if not passes_on:
                    break
    return names


def configured(cls, kwargs: dict, keyword: str):
    """The user's value for a job class's keyword: their kwargs', else Dask's config for the job
    class (`jobqueue.<config_name>.<key>`, as dask-jobqueue reads it); None when neither says."""
    import dask

    if kwargs.get(keyword) is not None:
        return kwargs[keyword]
    name = kwargs.get("config_name") or getattr(getattr(cls, "job_cls", None), "config_name", None)
    return dask.config.get(f"jobqueue.{name}.{keyword.replace('_', '-')}", default=None) if name else None


def job_prologue(cls, kwargs: dict) -> list[str]:
    """The user's prologue (configured), then JOB_PROLOGUE, then the worker's thread share."""
    own = configured(cls, kwargs, "job_script_prologue")
    own = [own] if isinstance(own, str) else list(own or [])
    ours = [line for line in JOB_PROLOGUE if not (LOGGING_ENV in line and any(LOGGING_ENV in o for o in own))]
    return [*own, *(line for line in ours if line not in own), *thread_share(cls, kwargs)]


def thread_share(cls, kwargs: dict) -> list[str]:
    """Dask's nanny starts each worker with OMP_NUM_THREADS=1 (`distributed.nanny.pre-spawn-environ`),
    which xmdata reads as the worker's share of the cores (runtime/cluster.shard_cores: its torch
    threads and scoring decoders). A job class told its `cores` and `processes` gives each worker
    cores ÷ processes instead; without `processes` (dask-jobqueue then picks it) Dask's 1 stays."""
    cores, processes = configured(cls, kwargs, "cores"), configured(cls, kwargs, "processes")
    try:
        share = max(1, int(cores) // int(processes))
    except (TypeError, ValueError):
        return []
    names = ", ".join(f'"{name}": {share}' for name in THREAD_VARIABLES)
    return [f"export DASK_DISTRIBUTED__NANNY__PRE_SPAWN_ENVIRON='{{{names}}}'"]


def queue_checks(cls) -> dict | None:
    job = getattr(cls, "job_cls", None)
    submit = getattr(job, "submit_command", None)
    return QUEUE_CHECKS.get(os.path.basename(shlex.split(submit)[0])) if submit else None


def _queue(command: list[str], stdin: str | None = None) -> tuple[bool, str]:
    """(whether it succeeded, its message in one line)."""
    try:
        done = subprocess.run(command, input=stdin, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return False, f"{command[0]}: {exc}"
    message = " ".join((done.stderr or done.stdout).split())
    return done.returncode == 0, message


def check_queue(cluster, checks: dict, name: str) -> None:
    """Before any job: the queue answers (ClusterUnavailable, exit 1), and takes the job script (ContractError, exit 2)."""
    answered, message = _queue(checks["answers"])
    if not answered:
        raise ClusterUnavailable(f"cluster {name}: the batch queue does not answer ({' '.join(checks['answers'][:1])}: "
                           f"{message}); are munge and slurmctld running, and SLURM_CONF the cluster's?")
    accepted, message = _queue(checks["dry_run"], cluster.job_script())
    if not accepted:
        raise refused(f"cluster {name}: {' '.join(checks['dry_run'])} refuses its job script: {message}")


def wait_for_first_workers(cluster, client, options: ClusterOptions, count: int, checks: dict | None) -> None:
    """Returns once `count` workers joined; else cancels the jobs (closing the cluster) and says the
    queue's state in one line (ClusterUnavailable, exit 1)."""
    try:
        client.wait_for_workers(count, timeout=options.start_timeout_s)
        return
    except TimeoutError:
        pass
    jobs = [getattr(job, "job_id", None) for job in getattr(cluster, "workers", {}).values()]
    jobs = [str(job) for job in jobs if job]
    state = ""
    if checks and jobs:
        state = "; the queue: " + (_queue([*checks["state"], ",".join(jobs)])[1] or "none of them queued")
    client.close()
    cluster.close(timeout=20)
    raise ClusterUnavailable(f"cluster {options.cluster_class}: {count} worker(s) did not join within "
                       f"{options.start_timeout_s:g} s (--cluster-start-timeout){state}; its jobs were cancelled")


def scheduler_options(cls, kwargs: dict, dashboard: bool) -> dict:
    """The user's scheduler_options (their kwargs', else Dask's config for the job class), with the
    scheduler's HTTP server on DASHBOARD_HOST unless they named a dashboard_address, and its
    dashboard served only when the session asked for one: dask-jobqueue's default is ":8787", every
    interface, and with no address at all Dask's scheduler still serves on its own (the network's)."""
    from .cluster import DASHBOARD_HOST

    own = dict(configured(cls, kwargs, "scheduler_options") or {})
    if "dashboard_address" not in own:
        own.update(dashboard_address=f"{DASHBOARD_HOST}:0", dashboard=own.get("dashboard", dashboard))
    return own


def start_cluster(options: ClusterOptions, workers: int | None = None, jobs_folder: str | None = None,
                  dashboard: bool = False):
    """(cluster, client): the class built with its kwargs, then adaptive between min and max, or
    scaled to `workers` when given; returns once adapt's MIN (or `workers`) joined. `jobs_folder`:
    where a batch job's log goes unless the kwargs say; `dashboard`: whether its scheduler serves
    its dashboard (on 127.0.0.1, as a LocalCluster's)."""
    from distributed import Client

    from .owner_only import new_dask_credentials

    cls, kwargs = cluster_class(options), dict(options.cluster_kwargs)
    keywords = takes(cls)
    if "security" in keywords and "protocol" in keywords and "security" not in kwargs:
        kwargs.update(security=new_dask_credentials().security(), protocol="tls://")
    if "scheduler_options" in keywords:  # dask-jobqueue's: it refuses a dashboard_address of its own
        kwargs["scheduler_options"] = scheduler_options(cls, kwargs, dashboard)
    elif "dashboard_address" in keywords and "dashboard_address" not in kwargs:  # distributed's LocalCluster
        from .cluster import DASHBOARD_HOST

        kwargs["dashboard_address"] = f"{DASHBOARD_HOST}:0"  # its default, ":8787", is every interface
        if "scheduler_kwargs" in keywords:
            kwargs["scheduler_kwargs"] = {"dashboard": dashboard, **(kwargs.get("scheduler_kwargs") or {})}
    if "job_script_prologue" in keywords:
        kwargs["job_script_prologue"] = job_prologue(cls, kwargs)
    for keyword in ("log_directory", "shared_temp_directory"):  # job logs; the TLS files its jobs read
        if keyword in keywords and configured(cls, kwargs, keyword) is None and jobs_folder:
            os.makedirs(jobs_folder, mode=0o700, exist_ok=True)
            kwargs[keyword] = jobs_folder
    checks = queue_checks(cls)
    asked = kwargs.pop("n_workers", None) if checks else None  # no job before the checks
    try:
        cluster = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise refused(f"cluster {options.cluster_class}: cannot start with "
                      f"{options.cluster_kwargs}: {exc}") from exc
    try:
        if checks:
            check_queue(cluster, checks, options.cluster_class)
    except BaseException:
        cluster.close(timeout=20)
        raise
    if options.adapt_minimum is not None or options.adapt_maximum is not None:
        cluster.adapt(minimum=options.adapt_minimum or 0, maximum=options.adapt_maximum or 1)
        first = options.adapt_minimum or 0
    else:
        first = workers or asked or 0
        if first:
            cluster.scale(first)
    client = Client(cluster, security=getattr(cluster, "security", None), set_as_default=False)
    if first:
        wait_for_first_workers(cluster, client, options, first, checks)
    return cluster, client
