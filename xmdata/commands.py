"""What each CLI subcommand does; imported only after arguments are parsed."""
from __future__ import annotations

import json
import logging
import os
import sys
import time

from xmdata.runtime import storage
from xmdata.schemas import CONTRACTS, ContractError
from xmdata.schemas.readers import read_input


class _InputErrorsOnce(logging.Filter):
    """A refused input or model (exit 2) or failed shards (exit 1) are printed by the CLI in one
    line; Prefect's console copy, traceback and all, is dropped. The Prefect API (the UI's run
    logs) still gets it; -v shows it."""

    NAMES = ("ContractError", "ModelError", "ShardsFailed")

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.ERROR:
            return True
        if record.exc_info and type(record.exc_info[1]).__name__ in self.NAMES:
            return False
        return not any(f"{name}(" in record.getMessage() or f"{name}:" in record.getMessage()
                       for name in self.NAMES)


INPUT_ERRORS_ONCE = _InputErrorsOnce()


def _run_flow(flow_fn, args, summary_dir: str | None = None, cluster=None, url_out: bool = False,
              **params) -> dict:
    """`cluster`: a release config's; --cluster on the command line wins over it. `url_out`: the
    flow writes through runtime/storage.py, so --out may be an object-store URL."""
    import prefect  # noqa: F401  (configures logging: its console handler is then in place)

    from xmdata.runtime.cluster_spec import cluster_options
    from xmdata.runtime.progress import PROGRESS_ENV
    from xmdata.runtime.run_setup import run_environment
    from xmdata.runtime.storage_check import check_location

    if storage.is_url(args.out) and not url_out:
        raise ContractError(f"--out {args.out}: this command writes its outputs with local tools; give a local "
                            f"folder (identify-language, score and release write to object stores)")
    if not args.verbose:
        for handler in logging.getLogger().handlers:
            handler.addFilter(INPUT_ERRORS_ONCE)  # one instance: a second run adds nothing
    cluster = cluster_options(args.cluster, args.cluster_kwargs, args.adapt) or cluster
    args.out = storage.absolute(args.out)  # workers of an external cluster have another cwd
    check_location(args.out, "--out")  # a store we cannot write to stops here, before any start
    for folder in (args.out, summary_dir or args.out):
        if not storage.is_url(folder):  # an object store has no folders to make
            os.makedirs(folder, exist_ok=True)
    os.environ[PROGRESS_ENV] = "0" if args.quiet else "1"
    started = time.perf_counter()
    log_dir = None if storage.is_url(summary_dir or args.out) else summary_dir or args.out
    with run_environment(args.executor, args.dask_address, args.workers, log_dir, args.quiet, cluster):
        summary = flow_fn(out=args.out, shards=args.shards, **params)
    if not args.quiet:
        print(storage.read_text(storage.join(summary_dir or args.out, "summary.md")))
        for stage, counts in summary["run"].items():
            print(f"{stage}: {counts['shards_run']} shard(s) run, {counts['shards_skipped']} skipped "
                  f"(already finished) of {counts['shards_total']}")
    print(f"done in {time.perf_counter() - started:.1f} s -> {args.out}")
    return summary


def release(args) -> int:
    """`xmdata demo` is the release of the packaged demo config."""
    if args.release_command == "verify":
        from xmdata.tasks.release_manifest import verify_release
        from xmdata.tasks.release_upload import verify_remote_release

        problems = (verify_remote_release if storage.is_url(args.dir) else verify_release)(args.dir)
        for line in problems:
            print(f"{args.dir}: {line}", file=sys.stderr)
        print(f"{args.dir}: {'differs from its manifest' if problems else 'every file matches its manifest'}")
        return 1 if problems else 0
    if not args.config or not args.out:
        raise ContractError("xmdata release needs --config FILE and --out DIR (or: xmdata release verify DIR)")
    from xmdata.flows.release import release_flow
    from xmdata.flows.release_preflight import checked_release

    # A broken config, input or model stops here, before any server starts.
    parsed, *_ = checked_release(args.config, args.shards, args.seed, args.sample, args.models)
    if args.work and storage.is_url(args.work):
        raise ContractError(f"--work {args.work}: a release's build folder is local (its stages write with "
                            f"local tools); --out may be a URL, the release is uploaded when built")
    from xmdata.tasks.release_upload import release_folders

    _, _, work = release_folders(args.out, args.work)
    result = _run_flow(release_flow, args, summary_dir=work, cluster=parsed.cluster, url_out=True,
                       config=args.config, seed=args.seed, work=work, sample=args.sample, models=args.models)
    print(f"release {result['release']}: {result['files']} files, release_sha256 {result['release_sha256']}")
    return 0


def identify_language(args) -> int:
    from xmdata.flows.language_id import identify_language_flow

    from xmdata.models.base import ModelSpec
    from xmdata.models.fasttext_lid import check_fasttext_file

    lid_model = args.lid_model if args.lid_model == "lid.176" else os.path.abspath(args.lid_model)
    read_input(args.input, CONTRACTS["captions"])  # fail in a second, before any server starts
    check_fasttext_file(ModelSpec("fasttext", lid_model))
    _run_flow(identify_language_flow, args, url_out=True, input_path=storage.absolute(args.input),
              lid_model=lid_model)
    return 0


def select_images(args) -> int:
    import polars as pl

    from xmdata.flows.release_preflight import check_image_inputs
    from xmdata.flows.select_images import ShortfallError, select_images_flow

    check_image_inputs(args.input, args.languages)  # fail fast, before any server starts
    try:
        _run_flow(select_images_flow, args, input_path=storage.absolute(args.input),
                  languages=args.languages, per_language=args.per_language, strategy=args.strategy,
                  within=args.within, seed=args.seed, strict=args.strict)
        code = 0
    except ShortfallError as exc:
        print(f"xmdata: error (--strict): {exc}", file=sys.stderr)
        code = 1
    with pl.Config(tbl_rows=100, tbl_hide_dataframe_shape=True):
        print(pl.read_parquet(os.path.join(args.out, "selection_summary.parquet")))
    return code


def validate(args) -> int:
    if args.table not in CONTRACTS:
        raise ContractError(f"unknown table {args.table!r}; known: {', '.join(sorted(CONTRACTS))}")
    from xmdata.tasks.validate_rows import describe_rejects, would_reject

    table = read_input(args.input, CONTRACTS[args.table])
    rejects = would_reject(table, CONTRACTS[args.table])
    print(f"{args.input}: {table.num_rows} rows have the types of '{args.table}'; "
          f"{table.num_rows - rejects.num_rows} would be kept, {rejects.num_rows} refused")
    for line in describe_rejects(rejects):
        print(f"  {line}")
    return 1 if rejects.num_rows else 0


def score(args) -> int:
    from xmdata.flows.score import score_flow
    from xmdata.models.base import ModelError
    from xmdata.tasks.score_input import check_clip_model, read_score_input

    read_score_input(args.input, args.references_column)  # fail in a second, before any server starts
    if args.image_root and storage.is_url(args.image_root):
        from xmdata.runtime.storage_check import check_location

        check_location(args.image_root, "--image-root")
    elif args.image_root and not os.path.isdir(args.image_root):
        raise ContractError(f"--image-root {args.image_root}: not a folder")
    check_clip_model(args.clip_model, args.pretrained)
    if args.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ModelError("--device cuda, but no CUDA device is visible")
        if args.workers is None and not args.dask_address:
            args.workers = torch.cuda.device_count()  # one worker, one model copy, per GPU
    extra = {"max_image_pixels": args.max_image_pixels} if args.max_image_pixels else {}
    summary = _run_flow(
        score_flow, args, url_out=True, input_path=storage.absolute(args.input), clip_model=args.clip_model,
        pretrained=args.pretrained, image_root=args.image_root and storage.absolute(args.image_root),
        references_column=args.references_column,
        embeddings=args.embedding_dtype if args.embeddings else "none", batch_size=args.batch_size,
        weight=args.weight, prefix=args.prefix, device=args.device, autocast=args.autocast, **extra)
    run = summary["scoring_run"]
    rate = f", {run['pairs_per_second']} pairs/s" if run["pairs_per_second"] else ""
    print(f"scoring: {run['scored']} of {run['pairs']} pairs scored in {run['seconds']} s{rate}")
    return 0


def models(args) -> int:
    if args.models_command == "convert":
        from xmdata.commands_translate import convert_model

        return convert_model(args)
    from xmdata.models.tiny import build_tiny_models

    specs = build_tiny_models(args.dir, seed=args.seed)
    print(json.dumps({k: v.to_dict() for k, v in specs.items()}, indent=2))
    return 0


def evaluate(args) -> int:
    from xmdata.tasks.eval_runner import evaluate_command

    return evaluate_command(args)


from xmdata.commands_translate import select_translations, translate, translate_qa  # noqa: E402

def import_dataset(args) -> int:
    from xmdata.tasks.importers.options import ImportOptions
    from xmdata.tasks.importers.run import import_dataset as run_import, report_markdown

    options = ImportOptions(**{k: getattr(args, k) for k in ImportOptions.model_fields})
    report = run_import(args.format, args.source, args.out, options)
    print(report_markdown(report))
    print(f"-> {os.path.abspath(args.out)}")
    return 0


def serve(args) -> int:
    from xmdata.serve import serve_deployments

    return serve_deployments(args)


def service(args) -> int:
    """`xmdata up` / `down` / `status`: the background Prefect server and warm Dask cluster."""
    from xmdata.runtime.service_status import service_command

    return service_command(args)


def worker(args) -> int:
    from xmdata.runtime.worker_command import worker_command

    return worker_command(args)


COMMANDS = {"worker": worker, "up": service, "down": service, "status": service, "demo": release, "release": release, "serve": serve, "identify-language": identify_language, "select-images": select_images,
            "translate": translate, "select-translations": select_translations, "translate-qa": translate_qa,
            "score": score, "evaluate": evaluate, "import": import_dataset, "validate": validate, "models": models}
