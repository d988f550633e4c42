"""Any `distributed` cluster manager by name: SLURM (dask-jobqueue), Kubernetes (dask-kubernetes),
or anything else with the Cluster interface, started for a run and closed after it.

Declared once (`ClusterOptions`): the CLI's `--cluster CLASS --cluster-kwargs k=v,… --adapt MIN:MAX`,
a release config's `cluster:` section and the release deployment's `cluster` parameter are all
this model. No code knows any cluster class: it is imported by its dotted path when first needed.

A class whose constructor takes `security` and `protocol` (LocalCluster, dask-jobqueue's) gets the
mutual TLS of every cluster xmdata starts (owner_only.py), unless its kwargs set their own; any
other class's security is its own configuration's.
"""
from __future__ import annotations

import importlib
import inspect
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from xmdata.schemas.contract import ContractError

from .storage import key_values


class ClusterOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    cluster_class: str = Field(description="dotted path of a distributed cluster class, e.g. "
                               "dask_jobqueue.SLURMCluster, dask_kubernetes.operator.KubeCluster")
    cluster_kwargs: dict[str, Any] = Field(default_factory=dict, description="its constructor's arguments, "
                                           "e.g. {cores: 8, memory: 64GB}")
    adapt_minimum: int | None = Field(None, ge=0, description="adaptive scaling: fewest workers (or jobs)")
    adapt_maximum: int | None = Field(None, ge=1, description="adaptive scaling: most workers (or jobs)")


def cluster_options(cluster: str | None, kwargs: str | None, adapt: str | None) -> ClusterOptions | None:
    """The CLI's three flags as one ClusterOptions (None without --cluster); bad values exit 2."""
    if cluster is None:
        if kwargs or adapt:
            raise ContractError("--cluster-kwargs and --adapt need --cluster CLASS")
        return None
    low, sep, high = (adapt or "").partition(":")
    if adapt and not (sep and low.strip().isdigit() and high.strip().isdigit()):
        raise ContractError(f"--adapt {adapt!r}: expected MIN:MAX, e.g. 0:20")
    options = ClusterOptions(cluster_class=cluster,
                             cluster_kwargs=key_values([p for p in (kwargs or "").split(",") if p], "--cluster-kwargs"),
                             adapt_minimum=int(low) if adapt else None, adapt_maximum=int(high) if adapt else None)
    cluster_class(options)  # an unknown class stops the command here, before anything starts
    return options


def cluster_class(options: ClusterOptions):
    module, _, name = options.cluster_class.rpartition(".")
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as exc:
        raise ContractError(f"cluster class {options.cluster_class!r}: cannot import it "
                            f"({type(exc).__name__}: {exc}); is its package installed?") from exc


def start_cluster(options: ClusterOptions, workers: int | None = None):
    """(cluster, client): the class built with its kwargs, then adaptive between min and max, or
    scaled to `workers` when given."""
    from distributed import Client

    from .owner_only import new_dask_credentials

    cls, kwargs = cluster_class(options), dict(options.cluster_kwargs)
    try:
        takes = inspect.signature(cls).parameters
    except (TypeError, ValueError):
        takes = {}
    if "security" in takes and "protocol" in takes and "security" not in kwargs:
        kwargs.update(security=new_dask_credentials().security(), protocol="tls://")
    try:
        cluster = cls(**kwargs)
    except (TypeError, ValueError) as exc:
        raise ContractError(f"cluster {options.cluster_class}: cannot start with "
                            f"{options.cluster_kwargs}: {exc}") from exc
    if options.adapt_minimum is not None or options.adapt_maximum is not None:
        cluster.adapt(minimum=options.adapt_minimum or 0, maximum=options.adapt_maximum or 1)
    elif workers:
        cluster.scale(workers)
    return cluster, Client(cluster, security=getattr(cluster, "security", None), set_as_default=False)
