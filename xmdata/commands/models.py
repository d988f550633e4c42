"""`xmdata models build-tiny` and `xmdata models convert`: the tiny real-architecture models (offline),
and a translation checkpoint converted for CTranslate2 ahead of its first run."""
from __future__ import annotations

import argparse

from xmdata.cli_command import Command
from xmdata.cli_options import seed_int
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.translation.options import TranslatorOptions


def add_build_tiny_arguments(tiny: argparse.ArgumentParser) -> None:
    tiny.add_argument("dir")
    tiny.add_argument("--seed", type=seed_int, default=0)


def build_tiny(args: argparse.Namespace) -> int:
    import json

    from xmdata.models.tiny import build_tiny_models

    specs = build_tiny_models(args.dir, seed=args.seed)
    print(json.dumps({k: v.to_dict() for k, v in specs.items()}, indent=2))
    return 0


def add_convert_arguments(cv: argparse.ArgumentParser) -> None:
    cv.add_argument("model", help="hub id or local path of the Hugging Face checkpoint")
    # The translator's own options that decide the conversion; the engine is ctranslate2 by definition.
    decisive = ("backend", "revision", "device", "dtype", "compute_type")
    add_param_flags(cv, ParamFlags(TranslatorOptions, skip=tuple(set(TranslatorOptions.model_fields) - set(decisive))))


def convert(args: argparse.Namespace) -> int:
    """The conversion a ctranslate2 run would make on first use, made now."""
    from xmdata.models.ct2_convert import ensure_converted

    spec = TranslatorOptions.model_validate({**args.params.model_dump(exclude_unset=True), "model": args.model,
                                             "engine": "ctranslate2"}).spec()
    print(ensure_converted(spec, spec.option("compute_type")))
    return 0


MODELS = Command("models", "model utilities", guide="explanation/installing.md", subcommand_dest="models_command",
                 subcommands=(
                     Command("build-tiny", "build tiny real-architecture models offline", add_build_tiny_arguments,
                             build_tiny),
                     Command("convert", "convert an M2M100 or MADLAD checkpoint for --engine ctranslate2 (cached "
                             "beside it, keyed by its sha256 and the compute type)", add_convert_arguments, convert),
                 ))
