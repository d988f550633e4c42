"""A batch job's worker log (cluster_spec.JOB_PROLOGUE's DASK_LOGGING, Dask's `logging` config in
logging.config.dictConfig form): Dask's, tornado's and asyncio's errors are kept, only the known
noise of a connection that ended is not — a job cancelled or preempted mid-run breaks every
connection its worker had, and each would otherwise log its traceback.

Imported by `logging.config.dictConfig` while `distributed` itself is being imported in the job
(distributed/config.py initialize_logging): nothing here imports Dask, tornado or xmdata's others.
"""
from __future__ import annotations

import logging
import ssl

# The exceptions of a connection that ended, by class name where they are Dask's or tornado's
# (distributed.comm.core.CommClosedError, tornado.iostream.StreamClosedError), anywhere in the raised
# one's bases or its chain (__cause__, __context__).
ENDED_NAMES = {"CommClosedError", "StreamClosedError"}
ENDED_TYPES = (ConnectionError, EOFError, ssl.SSLError)


def connection_ended(error: BaseException | None) -> bool:
    seen = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        if isinstance(error, ENDED_TYPES) or ENDED_NAMES & {cls.__name__ for cls in type(error).__mro__}:
            return True
        error = error.__cause__ or error.__context__
    return False


class EndOfConnection(logging.Filter):
    """Drops a record whose exception is a connection that ended; every other record passes."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (record.exc_info and connection_ended(record.exc_info[1]))


FORMAT = "%(asctime)s - %(name)s - %(levelname)s - %(message)s"  # Dask's distributed.admin.log-format
LEVELS = {"distributed": "WARNING", "distributed.comm": "ERROR", "distributed.batched": "ERROR",
          "distributed.core": "ERROR", "tornado": "ERROR", "asyncio": "ERROR", "xmdata": "INFO"}


def dask_logging() -> dict:
    """Dask's `logging` config for a job's worker: LEVELS, through one stderr handler with EndOfConnection."""
    return {"version": 1, "disable_existing_loggers": False,
            "filters": {"end_of_connection": {"()": f"{__name__}.EndOfConnection"}},
            "formatters": {"dask": {"format": FORMAT}},
            "handlers": {"stderr": {"class": "logging.StreamHandler", "stream": "ext://sys.stderr",
                                    "formatter": "dask", "filters": ["end_of_connection"]}},
            "loggers": {name: {"level": level, "handlers": ["stderr"], "propagate": False}
                        for name, level in LEVELS.items() if "." not in name}
            | {name: {"level": level} for name, level in LEVELS.items() if "." in name}}
