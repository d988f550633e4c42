"""`xmdata train <recipe> RELEASE --out DIR`: train a model on a release's tables, one sub-command per
recipe, its flags generated from the recipe's params (light: pydantic and argparse only). A recipe is
a Command in TRAIN's subcommands: `distill` here, `clipscore` in train_clipscore.py."""
from __future__ import annotations

import argparse
import sys

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.commands.train_clipscore import CLIPSCORE, train_on_release
from xmdata.tasks.train.params import DistillParams  # pydantic only


def add_distill_arguments(distill: argparse.ArgumentParser) -> None:
    distill.add_argument("release", help="a release folder (manifest.json) with QA translations")
    distill.add_argument("--out", required=True, help="run folder: checkpoint, artifacts/ (loss log, curve), "
                         "model/; a store URL: trained in a local folder, every file moved up when the run ends")
    add_param_flags(distill, ParamFlags(DistillParams))
    add_run_options(distill)


def distill(args: argparse.Namespace) -> int:
    from xmdata.flows.train_distill import train_distill_flow
    from xmdata.tasks.train.distill import check_distill

    summary = train_on_release(args, check_distill, train_distill_flow)  # a release without QA translations: refused
    print(f"train distill: {summary['steps']} optimizer steps ({summary['resumed_from']} resumed), "
          f"model -> {summary['model']}", file=sys.stdout)
    return 0


DISTILL = Command("distill", "xVLM2Vec self-knowledge distillation on the release's QA translations: the student "
                  "learns the frozen teacher's English embeddings", add_distill_arguments, distill)
TRAIN = Command("train", "train a model on a release (the papers' recipes at any scale); killed and started again, "
                "a run resumes from its last checkpoint", guide="how-to/train.md", subcommand_dest="recipe",
                subcommands=(DISTILL, CLIPSCORE))
