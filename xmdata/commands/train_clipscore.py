"""`xmdata train clipscore RELEASE --out DIR`: its parser (flags from ClipscoreParams) and its runner.
Light at import: pydantic and argparse only."""
from __future__ import annotations

import argparse

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.train.clipscore_params import ClipscoreParams  # pydantic only


def add_arguments(clipscore: argparse.ArgumentParser) -> None:
    clipscore.add_argument("release", help="a release folder (manifest.json) with a captions table and a rated-pairs "
                           "table")
    clipscore.add_argument("--out", required=True, help="run folder: checkpoint, artifacts/ (loss log, curve), eval/ "
                           "(before and after), model/ (loads with `xmdata score --clip-model`)")
    add_param_flags(clipscore, ParamFlags(ClipscoreParams))
    add_run_options(clipscore)


def clipscore(args: argparse.Namespace) -> int:
    import sys

    from xmdata.flow_run import run_flow
    from xmdata.flows.train_clipscore import train_clipscore_flow
    from xmdata.runtime import storage
    from xmdata.tasks.train.clipscore import check_clipscore

    release = storage.absolute(args.release)
    check_clipscore(release, args.params)  # a release without its tables stops here, nothing written
    # a training run is one task, not shards: --shards is every command's run option, unused here
    summary = run_flow(lambda out, shards, **kw: train_clipscore_flow(out=out, **kw), args, release=release,
                       params=args.params)
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
