"""Benchmarks: each prints ratios measured in one run; `./run bench` runs them all."""


def isolated_home(prefix: str) -> tuple[str, dict]:
    """A new temporary Prefect home and xmdata cache for this process (set before Prefect is
    imported), and the environment a command run from it gets: no executor or scheduler of the
    caller's. Returns (root folder, environment)."""
    import os
    import tempfile

    root = tempfile.mkdtemp(prefix=prefix)
    os.environ.update(PREFECT_HOME=os.path.join(root, "prefect"), XMDATA_CACHE=os.path.join(root, "cache"),
                      PREFECT_LOGGING_LEVEL="WARNING", DASK_LOGGING__DISTRIBUTED="warning")
    os.environ.pop("PREFECT_API_URL", None)
    return root, {k: v for k, v in os.environ.items() if k not in ("XMDATA_EXECUTOR", "XMDATA_DASK_ADDRESS")}
