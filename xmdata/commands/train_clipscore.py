"""`xmdata train clipscore RELEASE --out DIR`: its parser (flags from ClipscoreParams) and its runner.
Light at import: pydantic and argparse only."""
from __future__ import annotations

import argparse

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.train.clipscore_params import ClipscoreParams  # pydantic only


def train_on_release(args: argparse.Namespace, check, flow) -> dict:
    """A training recipe's run: the release checked (nothing written when refused), then its flow —
    one task, not shards: --shards is every command's run option, unused here."""
    from xmdata.flow_run import run_flow
    from xmdata.runtime import storage

    release = storage.absolute(args.release)
    check(release, args.params)
    return run_flow(lambda out, shards, **kw: flow(out=out, **kw), args, release=release, params=args.params,
                    checked=True)


def add_arguments(clipscore: argparse.ArgumentParser) -> None:
    clipscore.add_argument("release", help="a release folder (manifest.json) with a captions table and a rated-pairs "
                           "table")
    clipscore.add_argument("--out", required=True, help="run folder: checkpoint, artifacts/ (loss log, curve), eval/ "
                           "(before and after), model/ (loads with `xmdata score --clip-model`); a store URL: "
                           "trained in a local folder, every file moved up when the run ends")
    add_param_flags(clipscore, ParamFlags(ClipscoreParams))
    add_run_options(clipscore)


def clipscore(args: argparse.Namespace) -> int:
    import sys

    from xmdata.flows.train_clipscore import train_clipscore_flow
    from xmdata.tasks.train.clipscore_data import check_clipscore

    summary = train_on_release(args, check_clipscore, train_clipscore_flow)  # a release without its tables: refused
    figures = summary["figures"]
    print(f"train clipscore: {summary['steps']} optimizer steps ({summary['resumed_from']} resumed); held-out Pearson "
          f"{_fmt(figures.get('held_out_pearson_before'))} before, {_fmt(figures.get('held_out_pearson_after'))} "
          f"after; model -> {summary['model']}", file=sys.stdout)
    return 0


def _fmt(value) -> str:
    return "—" if value is None else f"{value:.3f}"


CLIPSCORE = Command("clipscore", "multilingual CLIPScore fine-tuning of an open_clip model: contrastive loss on the "
                    "release's captions, contrastive + Pearson loss against human ratings on its rated pairs, "
                    "alternating batches", add_arguments, clipscore)
