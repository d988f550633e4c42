"""The `xmdata` command's run: `main` parses (xmdata/cli_parser.py), checks what can be checked, runs
the command and turns what it raises into one line and an exit status (xmdata/exit_codes.py). Light on
purpose: --help must not import torch, Prefect or Dask."""
from __future__ import annotations

import os
import sys

from xmdata.cli_params import params_from_args
from xmdata.cli_parser import build_parser
from xmdata.exit_codes import BAD_INPUT, CLOSED_PIPE, FAILED, INTERRUPTED, OUT_OF_SPACE, SERVER_LOST
from xmdata.runtime import settings

def check_output_folder(path: str, flag: str) -> None:
    """An output folder that could never be written is refused before anything starts."""
    from xmdata.schemas import ContractError

    if os.path.exists(path) and not os.path.isdir(path):
        raise ContractError(f"{flag} {path}: exists and is not a folder")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ContractError(f"{flag} {path}: {parent} is a file, not a folder")
    if not os.access(parent if not os.path.isdir(path) else path, os.W_OK | os.X_OK):
        raise ContractError(f"{flag} {path}: {parent if not os.path.isdir(path) else path} is not writable")


def main(argv: list[str] | None = None) -> int:
    """The command's exit status. A closed stdout (`xmdata status | head -3`) ends it quietly, as SIGPIPE
    ends a program that writes to a pipe, without the signal: a socket's closed peer stays an error."""
    try:
        try:
            return run(argv)
        finally:
            sys.stdout.flush()  # what is still buffered meets a closed pipe here, not at the interpreter's exit
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # what is left in the buffer is written nowhere, quietly
        os.close(devnull)
        return CLOSED_PIPE


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe or socket nobody reads any more (poll says POLLERR or POLLHUP)."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
    except (OSError, ValueError):  # no file behind stdout (a test's capture)
        return False
    return any(event & (select.POLLERR | select.POLLHUP) for _, event in poller.poll(0))


def run(argv: list[str] | None) -> int:
    """Parse, check, run: a refused input, failed shards or a Ctrl-C in one line and its exit status."""
    args = build_parser().parse_args(argv)
    try:  # an ill-typed option stops here: before any heavy import, server or worker
        args.params = params_from_args(args)
    except ValueError as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)  # as every refused input: one line, exit 2
        return BAD_INPUT
    from xmdata.service.service_files import command_environment  # before Prefect and Dask read their config

    os.environ.update(command_environment(settings.child_env(), verbose=args.verbose))
    from xmdata.models.base import ModelError
    from xmdata.runtime.cluster_spec import ClusterUnavailable
    from xmdata.runtime.execution import ShardsFailed
    from xmdata.runtime.faults import SchedulerLost
    from xmdata.runtime.storage import is_url, parse_storage_options, using_storage_options
    from xmdata.runtime.storage_check import check_location
    from xmdata.schemas import ContractError
    from xmdata.schemas.column_map import column_mapping
    from xmdata.service.service import ServiceError

    try:
        with using_storage_options(parse_storage_options(getattr(args, "storage_option", None))):
            for flag in ("out", "work"):  # an output that cannot be written stops here, before any start
                if path := getattr(args, flag, None):
                    check = check_location if is_url(path) else check_output_folder
                    check(path, f"--{flag}")
            if hasattr(args, "memo"):  # a memo that is a file: refused; one that cannot be written: said
                from xmdata.runtime import memo

                if note := memo.check_location(memo.resolve_location(args.memo)):
                    print(note, file=sys.stderr)
            if getattr(args, "service_early", False):  # nothing of the user's left to check (the demo)
                from xmdata.service.run_setup import start_service_early

                start_service_early(args.executor, args.dask_address, (args.tls_ca_file, args.tls_cert, args.tls_key),
                                    args.quiet)
            with column_mapping(getattr(args, "map", None)) as mapping:
                code = args.runner(args) or 0  # heavy imports start here, after the checks above
    except (ContractError, ModelError) as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)
        return BAD_INPUT
    except (ShardsFailed, ServiceError, ClusterUnavailable) as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)
        return FAILED
    except SchedulerLost as exc:
        from xmdata.faults import kept

        print(f"xmdata: error: {exc}: the build stopped; {kept(getattr(args, 'out', None))} once it is back (the "
              f"service's: the next command starts a new one)", file=sys.stderr)
        return SERVER_LOST
    except Exception as exc:  # a full disk, a store that does not answer: said in one line (xmdata/faults.py)
        from xmdata.runtime.faults import is_out_of_space, store_unreachable

        if gone := store_unreachable(exc):
            from xmdata.faults import kept

            print(f"xmdata: error: {gone}: the build stopped; {kept(getattr(args, 'out', None))} once it answers",
                  file=sys.stderr)
            return SERVER_LOST
        if not is_out_of_space(exc):
            raise
        from xmdata.faults import out_of_space_line

        print(f"xmdata: error: {out_of_space_line(exc, getattr(args, 'out', None))}", file=sys.stderr)
        return OUT_OF_SPACE
    except KeyboardInterrupt:  # the stages stopped and said so (a Prefect run: Crashed); finished shards are kept
        print("xmdata: interrupted (finished shards are kept: the same command resumes from them)", file=sys.stderr)
        return INTERRUPTED
    if unused := mapping.unused():
        print(f"xmdata: warning: --map: no input had a column named {', '.join(unused)}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
