"""`xmdata train <recipe> RELEASE --out DIR`: train a model on a release's tables, one sub-command per
recipe, its flags generated from the recipe's params (light: pydantic and argparse only).

A recipe adds itself in two places: its parser in `add_train_commands` and its runner in RUNNERS
("module:function", imported only when the command runs)."""
from __future__ import annotations

import importlib

from xmdata.cli_params import ParamFlags, add_param_flags

RUNNERS = {
    "distill": "xmdata.commands_train:distill",
    "clipscore": "xmdata.commands_train_clipscore:clipscore",
}


def add_train_commands(sub, add_run_options) -> None:
    from xmdata.tasks.train.params import DistillParams  # pydantic only

    train = sub.add_parser("train", help="train a model on a release (the papers' recipes at any scale); "
                           "killed and started again, a run resumes from its last checkpoint")
    recipes = train.add_subparsers(dest="recipe", required=True)

    distill = recipes.add_parser("distill", help="xVLM2Vec self-knowledge distillation on the release's QA "
                                 "translations: the student learns the frozen teacher's English embeddings")
    distill.add_argument("release", help="a release folder (manifest.json) with QA translations")
    distill.add_argument("--out", required=True, help="run folder: checkpoint, artifacts/ (loss log, curve), model/")
    add_param_flags(distill, ParamFlags(DistillParams))
    add_run_options(distill)

    from xmdata.commands_train_clipscore import add_clipscore_command

    add_clipscore_command(recipes, add_run_options)


def train(args) -> int:
    module, _, name = RUNNERS[args.recipe].partition(":")
    return getattr(importlib.import_module(module), name)(args)


def distill(args) -> int:
    import sys

    from xmdata.flow_run import run_flow
    from xmdata.flows.train_distill import train_distill_flow
    from xmdata.runtime import storage
    from xmdata.tasks.train.distill import check_distill

    release = storage.absolute(args.release)
    check_distill(release, args.params)  # a release without QA translations stops here, nothing written
    # a training run is one task, not shards: --shards is every command's run option, unused here
    summary = run_flow(lambda out, shards, **kw: train_distill_flow(out=out, **kw), args, release=release,
                       params=args.params)
    print(f"train distill: {summary['steps']} optimizer steps ({summary['resumed_from']} resumed), "
          f"model -> {summary['model']}", file=sys.stdout)
    return 0
