"""Every exit status of `xmdata`, declared once: what the commands return, and the table of the commands
reference (docs/reference/commands.md, generated from EXIT_CODES). tests/cli/test_exit_codes.py fails
on a status some code returns that is not declared here."""
from __future__ import annotations

OK = 0
FAILED = 1
BAD_INPUT = 2
NOT_RUNNING = 3
OUT_OF_SPACE = 4  # a full disk: the environment's fault, not the input's
SERVER_LOST = 5
INTERRUPTED = 130  # as a shell reports a command SIGINT ended
CLOSED_PIPE = 141  # as a shell reports a command SIGPIPE ended (`xmdata status | head -3`)

EXIT_CODES = {
    OK: "done; `validate`: no row refused; `release verify`: every file matches; `release compare`: the same",
    FAILED: "some shards failed (each named with its reason; the same command reruns only those); the service "
            "did not start or stop (`down` names what still runs); a --cluster's batch queue did not answer, or "
            "its first workers did not join within --cluster-start-timeout (the queue's state said); `validate` "
            "refused rows; `release verify` or `release compare` found differences; an error xmdata did not foresee (its traceback)",
    BAD_INPUT: "refused before anything was written, in one line `xmdata: error: …`: a usage error, an input "
               "that breaks its contract, a model or output folder that cannot be used",
    NOT_RUNNING: "`status`: the service is not running (or runs other code)",
    OUT_OF_SPACE: "a disk filled up (or a quota was reached) in the output, the memo's folder or XMDATA_CACHE: "
                  "the folder named in one line; finished shards and stored memo entries are kept, and the same "
                  "command resumes once space is freed",
    SERVER_LOST: "a server the run needs went away mid-run: its Prefect server stopped answering "
                 "(XMDATA_PREFECT_LOST_SECONDS) or its Dask scheduler was lost; the build stopped in one line; "
                 "finished shards are kept; the next command starts the service anew (a server you named must be "
                 "started again) and the same command resumes",
    INTERRUPTED: "Ctrl-C (SIGINT): the stages stopped; finished shards are kept and the same command resumes",
    CLOSED_PIPE: "stdout's reader left (`xmdata status | head -3`): the command ended quietly",
}


def markdown() -> str:
    """The reference's table of exit statuses."""
    rows = [f"| {code} | {meaning} |" for code, meaning in sorted(EXIT_CODES.items())]
    return "\n".join(["| status | meaning |", "|---|---|", *rows]) + "\n"
