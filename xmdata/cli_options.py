"""Flags that several commands share: how a command runs its stages (the cluster, the executor, the
progress bar, an object store's options) and the value types they take. Light: argparse and pydantic."""
from __future__ import annotations

import argparse

from xmdata.runtime.session import EXECUTORS


def seed_int(text: str) -> int:
    """Seeds are non-negative integers: numpy's generators refuse the rest, mid-run."""
    if int(text) < 0:
        raise argparse.ArgumentTypeError(f"a seed is a non-negative integer, got {text}")
    return int(text)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def add_run_options(p: argparse.ArgumentParser) -> None:
    from xmdata.cli_params import annotated_flag
    from xmdata.runtime.cluster_spec import ClusterOptions
    from xmdata.tasks.stage_params import DEFAULT_SHARDS, ShardCount

    p.add_argument("--shards", **annotated_flag(ShardCount, DEFAULT_SHARDS))  # the flows' own declaration
    p.add_argument("--workers", type=positive_int, default=None,
                   help="a LocalCluster of N worker processes for this command alone "
                        "(default: the xmdata service's warm cluster, one worker per core)")
    p.add_argument("--dask-address", default=None,
                   help="run every stage on an existing Dask scheduler (tls://host:port with the three --tls-* "
                        "files or Dask's TLS config; tcp:// only on a network you trust); env XMDATA_DASK_ADDRESS")
    add_tls_flags(p, "with a tls:// --dask-address")
    p.add_argument("--dashboard", action="store_true",
                   help="a Dask cluster this command starts serves its dashboard on 127.0.0.1 (off by default; "
                        "the service's: `xmdata up --dashboard`)")
    p.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="auto (default): small stages in this process, the rest on the cluster; "
                        "inprocess: everything here; dask: everything on the cluster. Env XMDATA_EXECUTOR")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    p.add_argument("--wait-lock", type=float, default=0.0, metavar="SECONDS",
                   help="an output folder another run is writing: wait up to this long for it (default: refuse)")
    p.add_argument("--cluster", default=None, metavar="CLASS",
                   help="start this distributed cluster class for the big stages instead of a LocalCluster, "
                        "e.g. dask_jobqueue.SLURMCluster or dask_kubernetes.operator.KubeCluster")
    p.add_argument("--cluster-kwargs", default=None, metavar="K=V,…", help="its arguments, e.g. cores=8,memory=64GB")
    p.add_argument("--adapt", default=None, metavar="MIN:MAX", help="scale it adaptively between MIN and MAX workers")
    p.add_argument("--cluster-start-timeout", type=cluster_start_timeout, default=None, metavar="SECONDS",
                   help="cancel its jobs when adapt's MIN (or --workers) did not join within this long (default "
                        f"{ClusterOptions.model_fields['start_timeout_s'].default:g})")
    p.add_argument("--memo", default=None, metavar="FOLDER|URL|off",
                   help="the memo of model results per unit that builds reuse (default: XMDATA_MEMO, else "
                        "XMDATA_CACHE/memo); off: compute everything and store nothing")
    p.add_argument("--memo-audit", type=memo_audit, default=0.0, metavar="FRACTION",
                   help="compute this fraction of the memo's hits again and fail on a difference (default 0)")
    p.add_argument("--storage-option", action="append", default=None, metavar="KEY=VALUE",
                   help="for s3:// gs:// az:// URLs, repeatable, e.g. endpoint_url=http://127.0.0.1:8333 "
                        "(credentials otherwise from the usual environment: AWS_ACCESS_KEY_ID, …)")


def cluster_start_timeout(text: str) -> float:
    """The bound is ClusterOptions' (runtime/cluster_spec.py), the one every door checks."""
    from pydantic import ValidationError

    from xmdata.runtime.cluster_spec import ClusterOptions

    try:
        return ClusterOptions(cluster_class="-", start_timeout_s=text).start_timeout_s
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(f"{exc.errors()[0]['msg']}, got {text}") from None


def memo_audit(text: str) -> float:
    """The bound is MemoOptions' (runtime/memo.py), the one every door checks."""
    from xmdata.runtime.memo import MemoOptions

    try:
        return MemoOptions(None, float(text)).audit
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def add_tls_flags(p: argparse.ArgumentParser, when: str) -> None:
    """Dask's own spellings (`dask worker --tls-ca-file …`): the files of a cluster of the user's own."""
    for flag, what in (("--tls-ca-file", "the CA certificate"), ("--tls-cert", "this process's certificate"),
                       ("--tls-key", "its private key")):
        p.add_argument(flag, default=None, metavar="FILE", help=f"{what} (PEM), {when}")
