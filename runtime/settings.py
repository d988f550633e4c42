"""Every environment variable xmdata reads, declared once: its name, default, type and meaning.

Nothing else reads the environment: code asks a `Setting` (`CACHE.get()`), read when asked, so a
test's or a parent's change is seen and importing this costs nothing (`--help` stays light). State
inside one process travels in arguments or context variables, never in `os.environ`; a child's
environment is built with `child_env`. `xmdata --help` lists `USER`; the README lists all three
groups (`markdown`), checked against this file by tests/runtime/test_runtime.py.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Generic, Iterator, TypeVar

T = TypeVar("T")


@dataclass(frozen=True)
class Setting(Generic[T]):
    """One variable: unset or empty means `default`; a value `parse` refuses is a one-line error."""

    name: str
    default: T
    parse: Callable[[str], T]
    help: str
    expected: str = "a value"

    def get(self) -> T:
        raw = os.environ.get(self.name)
        if raw is None or not raw.strip():  # a text default goes through `parse` too (~ expanded)
            return self.parse(self.default) if isinstance(self.default, str) else self.default
        try:
            return self.parse(raw.strip())
        except ValueError:
            from xmdata.schemas.contract import ContractError

            raise ContractError(f"{self.name}={raw!r}: expected {self.expected}") from None

    def raw(self) -> str | None:
        """The text as set, None when unset: for a variable whose empty value means something
        (CUDA_VISIBLE_DEVICES="": no GPU)."""
        return os.environ.get(self.name)


def _path(raw: str) -> str:
    return os.path.expanduser(raw)


def _flag(raw: str) -> bool:
    if raw.lower() not in ("0", "1", "true", "false", "on", "off"):
        raise ValueError(raw)
    return raw.lower() in ("1", "true", "on")


def _at_least_zero(parse: Callable[[str], T]) -> Callable[[str], T]:
    def parsed(raw: str) -> T:
        value = parse(raw)
        if not value >= 0:  # NaN too
            raise ValueError(raw)
        return value
    return parsed


def _positive_int(raw: str) -> int:
    value = int(raw)
    if value < 1:
        raise ValueError(raw)
    return value


# xmdata's own: what a user sets.
CACHE = Setting("XMDATA_CACHE", os.path.join("~", ".cache", "xmdata"), _path,
                "models, tiny models, staged releases, converted checkpoints, geocoding tables, the service's state",
                "a folder")
EXECUTOR = Setting("XMDATA_EXECUTOR", "auto", str,
                   "where shards run when --executor is not given: auto, inprocess or dask",
                   "auto, inprocess or dask")
DASK_ADDRESS = Setting("XMDATA_DASK_ADDRESS", None, str,
                       "a Dask scheduler (tcp:// or tls://) every stage runs on, when --dask-address "
                       "is not given", "a scheduler address")
SERVICE = Setting("XMDATA_SERVICE", True, _flag,
                  "off: each command starts its own Prefect server and cluster and stops them after, "
                  "instead of the xmdata service", "on or off")
# The workers are the memory (~2 GB each after the demo, its imports more than its tiny models; the
# service and its Prefect server ~0.45 GB together): they go after a few minutes, the rest after the hour.
IDLE_MINUTES = Setting("XMDATA_IDLE_MINUTES", 60.0, _at_least_zero(float),
                       "the service stops after this many minutes without a command", "minutes (>= 0, inf)")
MODEL_IDLE_MINUTES = Setting("XMDATA_MODEL_IDLE_MINUTES", 3.0, _at_least_zero(float),
                             "a worker drops its models after this many minutes without a shard (inf: never)",
                             "minutes (>= 0, inf)")
MODEL_MEMORY_GB = Setting("XMDATA_MODEL_MEMORY_GB", 8.0, _at_least_zero(float),
                          "parameters a worker keeps loaded; past that the least recently used model goes",
                          "gigabytes (>= 0)")
BIND = Setting("XMDATA_BIND", "127.0.0.1", str,
               "the interface the service's Prefect server, scheduler and workers listen on", "a host")
GPU_WORKERS = Setting("XMDATA_GPU_WORKERS", None, _at_least_zero(int),
                      "this many GPU workers instead of the GPUs found (without CUDA: a resource for "
                      "the CPU tests)", "a count (>= 0)")
# Long enough for a loaded machine to restart a worker (tens of seconds) or a cluster to start.
NO_WORKER_SECONDS = Setting("XMDATA_NO_WORKER_SECONDS", 120.0, _at_least_zero(float),
                            "a stage on a Dask cluster that has had no worker for it this long fails, naming "
                            "the cluster and its workers' log (a batch queue's cluster: raise it, or inf)",
                            "seconds (>= 0, inf)")
PROGRESS = Setting("XMDATA_PROGRESS", False, _flag,
                   "progress bars on stderr for runs the CLI did not start (the CLI shows them "
                   "unless --quiet)", "0 or 1")
# A shard is what one worker holds at once: capping its rows keeps every process's memory flat in
# the input's size (runtime/shards.py plans the shards, tasks/build/ingest.py writes them).
SHARD_ROWS = Setting("XMDATA_SHARD_ROWS", 50_000, _positive_int,
                     "the rows a shard is planned to hold (about: rows go to shards by a hash of their id); "
                     "an input gets more shards than --shards when it needs them", "a count (>= 1)")
USER = (CACHE, EXECUTOR, DASK_ADDRESS, SERVICE, IDLE_MINUTES, MODEL_IDLE_MINUTES, MODEL_MEMORY_GB, BIND,
        GPU_WORKERS, NO_WORKER_SECONDS, PROGRESS, SHARD_ROWS)

# xmdata's own, for its tests, benchmarks and scripts only.
TEST_RUN = Setting("XMDATA_TEST_RUN", None, str, "the folder one test run shares with its subprocesses")
TEST_ARTEFACTS = Setting("XMDATA_TEST_ARTEFACTS", None, _path,
                         "where the browser tests leave screenshots (unset: test-artefacts/)")
REQUIRE_BROWSER = Setting("XMDATA_REQUIRE_BROWSER", False, _flag,
                          "1: a browser test without a browser fails instead of skipping (CI)", "0 or 1")
PEAK_BF16_TFLOPS = Setting("XMDATA_PEAK_BF16_TFLOPS", None, _at_least_zero(float),
                           "the GPU's peak bf16 TFLOP/s, for bench/scoring_gpu.py's utilisation", "TFLOP/s")
VENV = Setting("XMDATA_VENV", ".venv", str, "the virtual environment ./run uses (read by ./run, a shell script)")
GPU_TINY = Setting("XMDATA_GPU_TINY", None, _path, "a folder with the tiny XLM-R built beforehand, for the gpu tests "
                   "and bench.gpu_figures on a machine whose transformers cannot build it (bench/gpu_check.sh)")
DEVELOPMENT = (TEST_RUN, TEST_ARTEFACTS, REQUIRE_BROWSER, PEAK_BF16_TFLOPS, VENV, GPU_TINY)

# Other tools' variables, read here where xmdata decides something from them.
PREFECT_API_URL = Setting("PREFECT_API_URL", None, str, "a Prefect server to use instead of the service's")
PREFECT_API_AUTH_STRING = Setting("PREFECT_API_AUTH_STRING", None, str, "that server's user:password")
# A run started from the UI starts within 2 s, not Prefect's 10: one small query a poll.
PREFECT_RUNNER_POLL_FREQUENCY = Setting("PREFECT_RUNNER_POLL_FREQUENCY", 2, _at_least_zero(int),
                                        "seconds between `xmdata serve`'s polls for runs to start", "seconds")
OMP_NUM_THREADS = Setting("OMP_NUM_THREADS", None, _at_least_zero(int),
                          "torch/BLAS/CTranslate2 threads per process (unset or 0: its share of the cores)",
                          "a count")
CUDA_VISIBLE_DEVICES = Setting("CUDA_VISIBLE_DEVICES", None, str, "the GPUs this process may use")
AWS_ENDPOINT_URL_S3 = Setting("AWS_ENDPOINT_URL_S3", None, str, "an S3-compatible endpoint (named in errors)")
AWS_ENDPOINT_URL = Setting("AWS_ENDPOINT_URL", None, str, "the same, for every AWS service")
OTHER = (PREFECT_API_URL, PREFECT_API_AUTH_STRING, PREFECT_RUNNER_POLL_FREQUENCY, OMP_NUM_THREADS,
         CUDA_VISIBLE_DEVICES, AWS_ENDPOINT_URL_S3, AWS_ENDPOINT_URL)

ALL = USER + DEVELOPMENT + OTHER


def child_env(drop: tuple[str, ...] = (), **extra: str) -> dict[str, str]:
    """The environment for a child process: this one's, less `drop`, plus `extra`."""
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env.update(extra)
    return env


@contextmanager
def environ_for_libraries(values: dict[str, str | None]) -> Iterator[None]:
    """Set (or, for None, leave alone) variables that a library in this process reads — Prefect's
    client settings — for the block, and put back what was there."""
    values = {k: v for k, v in values.items() if v}
    before = {k: os.environ.get(k) for k in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


def markdown() -> str:
    """The README's tables of the variables (`python -m xmdata.runtime.settings` prints them)."""
    groups = (("xmdata's", USER), ("Other tools' variables xmdata reads to decide something", OTHER),
              ("For the tests, benchmarks and `./run` only", DEVELOPMENT))
    lines = []
    for title, settings in groups:
        lines += [f"{title}:", "", "| variable | default | meaning |", "|---|---|---|"]
        lines += [f"| `{s.name}` | {shown(s.default)} | {s.help} |" for s in settings] + [""]
    return "\n".join(lines).rstrip() + "\n"


def describe(settings: tuple[Setting, ...] = USER) -> list[str]:
    """One line per variable: name, default, meaning (what `xmdata --help` prints)."""
    return [f"{s.name} (default {shown(s.default)}): {s.help}" for s in settings]


def shown(default) -> str:
    if default is None:
        return "unset"
    if isinstance(default, bool):
        return "on" if default else "off"
    return default if isinstance(default, str) else f"{default:g}"


if __name__ == "__main__":
    print(markdown(), end="")
