"""`xmdata identify-language`: label every text of a table with its language (fastText)."""
from __future__ import annotations

import argparse

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.stage_params import LanguageIdParams


def add_arguments(lid: argparse.ArgumentParser) -> None:
    lid.add_argument("input", help="Parquet, CSV or JSONL with columns id, text")
    lid.add_argument("--out", required=True)
    add_param_flags(lid, ParamFlags(LanguageIdParams))
    add_run_options(lid)


def identify_language(args: argparse.Namespace) -> int:
    from xmdata.flow_run import run_flow
    from xmdata.flows.language_id import identify_language_flow
    from xmdata.models.base import ModelSpec
    from xmdata.models.fasttext_lid import check_fasttext_file
    from xmdata.runtime import storage
    from xmdata.schemas import CONTRACTS
    from xmdata.schemas.input_batches import open_input
    from xmdata.tasks.stage_params import BUNDLED_LID

    params = args.params
    if params.lid_model != BUNDLED_LID:  # workers of an external cluster run in another directory
        params = params.model_copy(update={"lid_model": storage.absolute(params.lid_model)})
    open_input(args.input, CONTRACTS["captions"]).check()  # fail before any server starts, a batch at a time
    check_fasttext_file(ModelSpec("fasttext", params.lid_model))
    run_flow(identify_language_flow, args, input_path=storage.absolute(args.input), params=params)
    return 0


IDENTIFY_LANGUAGE = Command("identify-language", "label every text of a table with its language", add_arguments,
                            identify_language, reads_tables=True, guide="how-to/commands.md")
