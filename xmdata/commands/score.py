"""`xmdata score`: CLIPScore / RefCLIPScore of image-text pairs with open_clip."""
from __future__ import annotations

import argparse
import os
import typing

from xmdata.cli_command import Command
from xmdata.cli_options import add_run_options
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.tasks.stage_params import EMBEDDINGS_ON, ScoringParams

EMBEDDING_DTYPES = [d for d in typing.get_args(ScoringParams.model_fields["embeddings"].annotation) if d != "none"]


def _embeddings_flags(args: argparse.Namespace, data: dict) -> None:
    """`--embeddings [--embedding-dtype float32]` is the command line's spelling of `embeddings` (true: its
    default dtype, as in a config; ScoringParams decides which)."""
    if args.embeddings:
        data["embeddings"] = getattr(args, "embedding_dtype", True)
    elif hasattr(args, "embedding_dtype"):
        raise ValueError("--embedding-dtype: only with --embeddings")


def add_arguments(score: argparse.ArgumentParser) -> None:
    score.add_argument("input", help="pairs: id, text, image_path (under --image-root) or image_bytes [, language]")
    score.add_argument("--image-root", default=None, help="folder image paths are under (default: the input's)")
    score.add_argument("--references-column", default=None, help="list column of references: adds ref_clip_score")
    add_param_flags(score, ParamFlags(ScoringParams, skip=("embeddings",), aliases=_embeddings_flags))
    score.add_argument("--embeddings", action="store_true", help="also write image_embedding, text_embedding")
    score.add_argument("--embedding-dtype", choices=EMBEDDING_DTYPES, default=argparse.SUPPRESS,
                       help=f"with --embeddings (default {EMBEDDINGS_ON})")
    score.add_argument("--out", required=True)
    score.add_argument("--dry-run", action="store_true",
                       help="say how many image and text embeddings the build would compute and how many the "
                            "memo holds; load no model, write nothing")
    add_run_options(score)


def score(args: argparse.Namespace) -> int:
    from xmdata.flow_run import run_flow
    from xmdata.flows.score import score_flow
    from xmdata.models.base import ModelError
    from xmdata.runtime import storage
    from xmdata.tasks.scoring.input import check_score_run

    params = args.params
    root = storage.absolute(args.image_root or os.path.dirname(storage.absolute(args.input)))
    pairs = check_score_run(args.input, params, root, args.references_column)  # in a second, before any server
    if args.dry_run:
        from xmdata.runtime import memo
        from xmdata.tasks.scoring.memo_plan import plan_text, score_memo_plan

        options = memo.MemoOptions(memo.resolve_location(args.memo))
        print(plan_text(score_memo_plan(pairs, params, root, args.references_column, options)))
        return 0
    if params.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ModelError("--device cuda, but no CUDA device is visible")
        if args.workers is None and not args.dask_address:
            args.workers = torch.cuda.device_count()  # one worker, one model copy, per GPU
    summary = run_flow(score_flow, args, input_path=storage.absolute(args.input), params=params,
                       image_root=args.image_root and storage.absolute(args.image_root),
                       references_column=args.references_column, checked=True)
    run = summary["scoring_run"]
    rate = f", {run['pairs_per_second']} pairs/s" if run["pairs_per_second"] else ""
    print(f"scoring: {run['scored']} of {run['pairs']} pairs scored in {run['seconds']} s{rate}")
    return 0


SCORE = Command("score", "CLIPScore / RefCLIPScore of image-text pairs with open_clip", add_arguments, score,
                reads_tables=True, guide="how-to/score.md")
