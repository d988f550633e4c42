"""Running a flow for a CLI command: logging, output folders, the run's environment, the summary.
Its own module, so that every command module can use it without importing the others."""
from __future__ import annotations

import logging
import os
import time

from xmdata.runtime import storage


class _InputErrorsOnce(logging.Filter):
    """A refused input or model (exit 2), failed shards (exit 1) or a full disk (exit 4) are printed
    by the CLI in one line; Prefect's console copy, traceback and all, is dropped. The Prefect API (the UI's run
    logs) still gets it; -v shows it."""

    NAMES = ("ContractError", "ModelError", "ShardsFailed", "FolderBusy", "ForeignLock", "OutOfSpace",
             "SchedulerLost", "StoreUnreachable")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        from xmdata.runtime.faults import is_out_of_space

        if record.exc_info and is_out_of_space(record.exc_info[1]):  # a full disk (a plain OSError too)
            return False
        if record.exc_info and any(c.__name__ in self.NAMES for c in type(record.exc_info[1]).__mro__):
            return False  # a subclass too (NotPrivate, NonFiniteLoss): the CLI prints it in one line
        return not any(f"{name}(" in record.getMessage() or f"{name}:" in record.getMessage()
                       for name in self.NAMES)


INPUT_ERRORS_ONCE = _InputErrorsOnce()


def run_flow(flow_fn, args, summary_dir: str | None = None, cluster=None, **params) -> dict:
    """`cluster`: a release config's; --cluster on the command line wins over it. Every flow writes
    through runtime/storage.py, so --out may be an object-store URL (checked by the CLI's main)."""
    import prefect  # noqa: F401  (configures logging: its console handler is then in place)

    from xmdata.runtime import memo
    from xmdata.runtime.cluster_spec import cluster_options
    from xmdata.runtime.folder_lock import one_writer, waiting_for_locks
    from xmdata.runtime.progress import showing_progress
    from xmdata.server_watch import SERVER_GONE_NOISE, watching_prefect_server
    from xmdata.service.run_setup import run_environment
    if not args.verbose:
        for handler in logging.getLogger().handlers:
            handler.addFilter(INPUT_ERRORS_ONCE)  # one instance: a second run adds nothing
            handler.addFilter(SERVER_GONE_NOISE)
    cluster = cluster_options(args.cluster, args.cluster_kwargs, args.adapt,
                              getattr(args, "cluster_start_timeout", None)) or cluster
    args.out = storage.absolute(args.out)  # workers of an external cluster have another cwd
    for folder in (args.out, summary_dir or args.out):
        if not storage.is_url(folder):  # an object store has no folders to make
            os.makedirs(folder, exist_ok=True)
    started = time.perf_counter()
    memo_options = memo.MemoOptions(memo.resolve_location(getattr(args, "memo", None)), getattr(args, "memo_audit", 0.0))
    log_dir = None if storage.is_url(summary_dir or args.out) else summary_dir or args.out
    # The flow takes OUT's lock too (re-entrant here): taken first, a busy folder is refused (or waited
    # for, --wait-lock) before any server starts.
    with waiting_for_locks(getattr(args, "wait_lock", 0.0)), one_writer(args.out), one_writer(summary_dir or args.out), \
            memo.using(memo_options), \
            showing_progress(not args.quiet), \
            run_environment(args.executor, args.dask_address, args.workers, log_dir, args.quiet, cluster,
                            tls=(args.tls_ca_file, args.tls_cert, args.tls_key), dashboard=args.dashboard), \
            watching_prefect_server(args.out):
        summary = flow_fn(out=args.out, shards=args.shards, **params)
    memo.record_run(memo_options, args.command, args.out, {stage: c.get("memo") for stage, c in summary["run"].items()})
    if not args.quiet:
        print(storage.read_text(storage.join(summary_dir or args.out, "summary.md")))
        from xmdata.runtime.stage_tracking import memo_line

        for stage, counts in summary["run"].items():
            print(f"{stage}: {counts['shards_run']} shard(s) run, {counts['shards_skipped']} skipped "
                  f"(already finished) of {counts['shards_total']}{memo_line(counts.get('memo'))}")
    print(f"done in {time.perf_counter() - started:.1f} s -> {args.out}")
    return summary
