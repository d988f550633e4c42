"""`xmdata evaluate <metric>`: one sub-command per metric, its flags generated from the metric's params
(tasks/evaluation/params.py), as the evaluate flow's form is. Light: pydantic and argparse only."""
from __future__ import annotations

import argparse
from typing import Callable

from xmdata.cli_command import Command
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.evaluation.params import METRICS


def _metric_arguments(params) -> Callable[[argparse.ArgumentParser], None]:
    def add_arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("input", help=params.input_help)
        p.add_argument("--out", required=True, help="folder for <metric>.json, <metric>.md and PNGs")
        add_param_flags(p, ParamFlags(params, skip=("metric",)))
    return add_arguments


def evaluate(args: argparse.Namespace) -> int:
    """Compute, write, print the Markdown and the paths."""
    import time

    from xmdata.runtime.folder_lock import one_writer
    from xmdata.tasks.evaluation.report import write_report
    from xmdata.tasks.evaluation.runner import run_metric

    started = time.perf_counter()
    with one_writer(args.out):  # one writer of OUT at a time (runtime/folder_lock.py)
        # --map is in the result's options, as it always was
        report = run_metric(args.metric, {**args.params.runner_options(args.input, args.out), "map": args.map})
        paths = write_report(report, args.out)
    print(report.markdown)
    print(f"wrote {', '.join(paths)} in {time.perf_counter() - started:.1f} s")
    return 0


EVALUATE = Command(
    "evaluate", "metrics over scored Parquet tables (JSON, Markdown, PNG)", guide="how-to/evaluate.md",
    subcommand_dest="metric", subcommands=tuple(
        # argparse formats help with %
        Command(name, params.__doc__.replace("%", "%%"), _metric_arguments(params), evaluate, reads_tables=True)
        for name, params in METRICS.items()))
