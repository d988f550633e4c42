"""What each CLI subcommand does; imported only after arguments are parsed."""
from __future__ import annotations

import json
import os
import time

from xmdata.runtime.prefect_api import prefect_api
from xmdata.schemas import CONTRACTS, ContractError
from xmdata.schemas.readers import read_input


def _run_flow(flow_fn, args, **params) -> dict:
    from xmdata.runtime.execution import dask_task_runner

    args.out = os.path.abspath(args.out)  # workers of an external cluster have another cwd
    os.makedirs(args.out, exist_ok=True)
    started = time.perf_counter()
    with prefect_api(log_path=os.path.join(args.out, "prefect-server.log")):
        runner = dask_task_runner(args.dask_address, args.workers)
        summary = flow_fn.with_options(task_runner=runner)(out=args.out, shards=args.shards, **params)
    print(open(os.path.join(args.out, "summary.md"), encoding="utf-8").read())
    for stage, counts in summary["run"].items():
        print(f"{stage}: {counts['shards_run']} shard(s) run, {counts['shards_skipped']} skipped "
              f"(already finished) of {counts['shards_total']}")
    print(f"done in {time.perf_counter() - started:.1f} s -> {args.out}")
    return summary


def demo(args) -> int:
    from xmdata.flows.demo import demo_flow

    _run_flow(demo_flow, args)
    return 0


def identify_language(args) -> int:
    from xmdata.flows.language_id import identify_language_flow

    read_input(args.input, CONTRACTS["captions"])  # fail in a second, before any server starts
    _run_flow(identify_language_flow, args, input_path=os.path.abspath(args.input),
              lid_model=args.lid_model)
    return 0


def validate(args) -> int:
    if args.table not in CONTRACTS:
        raise ContractError(f"unknown table {args.table!r}; known: {', '.join(sorted(CONTRACTS))}")
    table = read_input(args.input, CONTRACTS[args.table])
    print(f"{args.input}: {table.num_rows} rows conform to '{args.table}'")
    return 0


def models(args) -> int:
    from xmdata.models.tiny import build_tiny_models

    specs = build_tiny_models(args.dir, seed=args.seed)
    print(json.dumps({k: v.to_dict() for k, v in specs.items()}, indent=2))
    return 0


COMMANDS = {"demo": demo, "identify-language": identify_language, "validate": validate,
            "models": models}
