"""What each CLI subcommand does; imported only after arguments are parsed."""
from __future__ import annotations

import json
import os
import sys

from xmdata.commands_translate import select_translations, translate, translate_qa
from xmdata.flow_run import run_flow
from xmdata.runtime import storage
from xmdata.schemas import CONTRACTS, ContractError
from xmdata.schemas.readers import read_input


def release(args) -> int:
    """`xmdata demo` is the release of the packaged demo config."""
    if args.release_command == "verify":
        from xmdata.tasks.release.manifest import verify_release
        from xmdata.tasks.release.upload import verify_remote_release

        problems = (verify_remote_release if storage.is_url(args.dir) else verify_release)(args.dir)
        for line in problems:
            print(f"{args.dir}: {line}", file=sys.stderr)
        print(f"{args.dir}: {'differs from its manifest' if problems else 'every file matches its manifest'}")
        return 1 if problems else 0
    if args.release_command == "compare":
        from xmdata.tasks.release.compare import compare_releases

        comparison = compare_releases(args.a, args.b, args.tolerance)  # not a release: ContractError, exit 2
        for line in comparison.lines():
            print(line, file=sys.stderr)
        if comparison.differences:
            print(f"{args.a} (A) and {args.b} (B) differ: {comparison.differences} difference(s), floats "
                  f"within {comparison.tolerance:g} taken as equal")
            return 1
        print("\n".join(comparison.summary()))
        return 0
    if not args.config or not args.out:
        raise ContractError("xmdata release needs --config FILE and --out DIR "
                            "(or: xmdata release verify DIR, xmdata release compare A B)")
    from xmdata.flows.release import checked_release_flow
    from xmdata.flows.release_preflight import checked_release
    from xmdata.tasks.release.upload import release_folders

    # A broken config, input or model stops here, before any server starts; the flow runs on what was checked.
    checked = checked_release(args.config, args.shards, args.seed, args.sample, args.models, args.work)
    _, _, work = release_folders(args.out, args.work)
    result = run_flow(checked_release_flow, args, summary_dir=work, cluster=checked.config.cluster, release=checked,
                      work=work)
    print(f"release {result['release']}: {result['files']} files, release_sha256 {result['release_sha256']}")
    return 0


def identify_language(args) -> int:
    from xmdata.flows.language_id import identify_language_flow

    from xmdata.models.base import ModelSpec
    from xmdata.models.fasttext_lid import check_fasttext_file
    from xmdata.tasks.stage_params import BUNDLED_LID

    params = args.params
    if params.lid_model != BUNDLED_LID:  # workers of an external cluster run in another directory
        params = params.model_copy(update={"lid_model": storage.absolute(params.lid_model)})
    from xmdata.schemas.input_batches import open_input

    open_input(args.input, CONTRACTS["captions"]).check()  # fail before any server starts, a batch at a time
    check_fasttext_file(ModelSpec("fasttext", params.lid_model))
    run_flow(identify_language_flow, args, input_path=storage.absolute(args.input), params=params)
    return 0


def select_images(args) -> int:
    import polars as pl

    from xmdata.flows.release_preflight import check_image_inputs
    from xmdata.flows.select_images import ShortfallError, select_images_flow

    check_image_inputs(args.input, args.params.languages)  # fail fast, before any server starts
    try:
        run_flow(select_images_flow, args, input_path=storage.absolute(args.input), params=args.params,
                 seed=args.seed, strict=args.strict)
        code = 0
    except ShortfallError as exc:
        print(f"xmdata: error (--strict): {exc}", file=sys.stderr)
        code = 1
    with pl.Config(tbl_rows=100, tbl_hide_dataframe_shape=True):
        print(pl.from_arrow(storage.read_parquet(storage.join(args.out, "selection_summary.parquet"))))
    return code


def validate(args) -> int:
    if args.table not in CONTRACTS:
        raise ContractError(f"unknown table {args.table!r}; known: {', '.join(sorted(CONTRACTS))}")
    from xmdata.tasks.build.validate_rows import describe_rejects, would_reject

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
    from xmdata.tasks.scoring.input import check_clip_model, check_some_pair_scorable, read_score_input

    pairs = read_score_input(args.input, args.references_column)  # fail in a second, before any server starts
    if args.image_root and storage.is_url(args.image_root):
        from xmdata.runtime.storage_check import check_location

        check_location(args.image_root, "--image-root")
    elif args.image_root and not os.path.isdir(args.image_root):
        raise ContractError(f"--image-root {args.image_root}: not a folder")
    params = args.params
    check_clip_model(params.clip_model, params.pretrained)
    root = storage.absolute(args.image_root or os.path.dirname(storage.absolute(args.input)))
    check_some_pair_scorable(pairs, root, args.input)  # every row refused for one reason: a wrong input
    if params.device == "cuda":
        import torch

        if not torch.cuda.is_available():
            raise ModelError("--device cuda, but no CUDA device is visible")
        if args.workers is None and not args.dask_address:
            args.workers = torch.cuda.device_count()  # one worker, one model copy, per GPU
    summary = run_flow(score_flow, args, input_path=storage.absolute(args.input), params=params,
                       image_root=args.image_root and storage.absolute(args.image_root),
                       references_column=args.references_column)
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
    from xmdata.cli_evaluate import evaluate_command

    return evaluate_command(args)


def import_dataset(args) -> int:
    from xmdata.runtime.folder_lock import one_writer
    from xmdata.tasks.importers.options import ImportOptions
    from xmdata.tasks.importers.run import import_dataset as run_import, report_markdown

    from pydantic import ValidationError

    try:
        options = ImportOptions(**{k: getattr(args, k) for k in ImportOptions.model_fields})
    except ValidationError as exc:
        from xmdata.cli_params import flag_error

        raise ContractError("; ".join(flag_error(e, set(ImportOptions.model_fields)) for e in exc.errors())) from None
    with one_writer(args.out):  # one writer of OUT at a time (runtime/folder_lock.py)
        report = run_import(args.format, args.source, args.out, options)
    differences = (report.get("publisher_counts") or {}).get("differences") or []
    if differences:  # said whatever --quiet says: a count unlike the publisher's is never silent
        shown = "; ".join(differences[:5]) + (f"; … {len(differences) - 5} more" if len(differences) > 5 else "")
        print(f"xmdata: warning: {args.format}: {len(differences)} count(s) differ from the publisher's "
              f"(import_report.md lists them): {shown}", file=sys.stderr)
    if not args.quiet:
        print(report_markdown(report))
        print(f"-> {storage.absolute(args.out)}")
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

from xmdata.commands_images import download_images  # noqa: E402  (its module also declares its flags)
COMMANDS["download-images"] = download_images
from xmdata.commands_explain import explain  # noqa: E402
COMMANDS["explain"] = explain
from xmdata.commands_explore import explore  # noqa: E402  (its module also declares its flags)
COMMANDS["explore"] = explore
from xmdata.commands_clean import clean  # noqa: E402  (its module also declares its flags)
COMMANDS["dedup"] = COMMANDS["contamination"] = clean
from xmdata.commands_train import train  # noqa: E402  (its module also declares its flags)
COMMANDS["train"] = train
from xmdata.commands_lock import status, unlock  # noqa: E402
COMMANDS["status"], COMMANDS["unlock"] = status, unlock  # `status FOLDER`: its lock; `status`: the service
