"""The `xmdata` command. Light on purpose: --help must not import torch, Prefect or Dask."""
from __future__ import annotations

import argparse
import os
import sys
import typing

from xmdata.cli_params import ParamFlags, add_param_flags, params_from_args, port_number
from xmdata.cli_translate import add_translation_commands
from xmdata.tasks.release.choices import MODEL_CHOICES
from xmdata.runtime import settings
from xmdata.runtime.session import EXECUTORS
from xmdata.tasks.release.compare import TOLERANCE
from xmdata.tasks.stage_params import LanguageIdParams, ScoringParams, SelectImagesParams

EXIT_BAD_INPUT = 2
EXIT_SHARDS_FAILED = 1
EXIT_INTERRUPTED = 130  # Ctrl-C: as a shell reports a command SIGINT ended


def seed_int(text: str) -> int:
    """Seeds are non-negative integers: numpy's generators refuse the rest, mid-run."""
    if int(text) < 0:
        raise argparse.ArgumentTypeError(f"a seed is a non-negative integer, got {text}")
    return int(text)


def positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def _add_run_options(p: argparse.ArgumentParser) -> None:
    from xmdata.cli_params import annotated_flag
    from xmdata.tasks.stage_params import DEFAULT_SHARDS, ShardCount

    p.add_argument("--shards", **annotated_flag(ShardCount, DEFAULT_SHARDS))  # the flows' own declaration
    p.add_argument("--workers", type=positive_int, default=None,
                   help="a LocalCluster of N worker processes for this command alone "
                        "(default: the xmdata service's warm cluster, one worker per core)")
    p.add_argument("--dask-address", default=None,
                   help="run every stage on an existing Dask scheduler (tls://host:port with the three --tls-* "
                        "files or Dask's TLS config; tcp:// only on a network you trust); env XMDATA_DASK_ADDRESS")
    _add_tls_flags(p, "with a tls:// --dask-address")
    p.add_argument("--dashboard", action="store_true",
                   help="a Dask cluster this command starts serves its dashboard on 127.0.0.1 (off by default; "
                        "the service's: `xmdata up --dashboard`)")
    p.add_argument("--executor", choices=EXECUTORS, default=None,
                   help="auto (default): small stages in this process, the rest on the cluster; "
                        "inprocess: everything here; dask: everything on the cluster. Env XMDATA_EXECUTOR")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress bar and no summary table")
    p.add_argument("--wait-lock", type=float, default=0.0, metavar="SECONDS",
                   help="an output folder another run is writing: wait up to this long for it (default: refuse)")
    p.add_argument("--cluster", default=None, metavar="CLASS",
                   help="start this distributed cluster class for the big stages instead of a LocalCluster, "
                        "e.g. dask_jobqueue.SLURMCluster or dask_kubernetes.operator.KubeCluster")
    p.add_argument("--cluster-kwargs", default=None, metavar="K=V,…", help="its arguments, e.g. cores=8,memory=64GB")
    p.add_argument("--adapt", default=None, metavar="MIN:MAX", help="scale it adaptively between MIN and MAX workers")
    p.add_argument("--storage-option", action="append", default=None, metavar="KEY=VALUE",
                   help="for s3:// gs:// az:// URLs, repeatable, e.g. endpoint_url=http://127.0.0.1:8333 "
                        "(credentials otherwise from the usual environment: AWS_ACCESS_KEY_ID, …)")


def _add_tls_flags(p: argparse.ArgumentParser, when: str) -> None:
    """Dask's own spellings (`dask worker --tls-ca-file …`): the files of a cluster of the user's own."""
    for flag, what in (("--tls-ca-file", "the CA certificate"), ("--tls-cert", "this process's certificate"),
                       ("--tls-key", "its private key")):
        p.add_argument(flag, default=None, metavar="FILE", help=f"{what} (PEM), {when}")


EMBEDDING_DTYPES = [d for d in typing.get_args(ScoringParams.model_fields["embeddings"].annotation) if d != "none"]


def _embeddings_flags(args: argparse.Namespace, data: dict) -> None:
    """`--embeddings [--embedding-dtype float32]` is the command line's spelling of `embeddings`."""
    if args.embeddings:
        data["embeddings"] = getattr(args, "embedding_dtype", EMBEDDING_DTYPES[0])
    elif hasattr(args, "embedding_dtype"):
        raise ValueError("--embedding-dtype: only with --embeddings")


def build_parser() -> argparse.ArgumentParser:
    from xmdata.runtime import settings  # light: declarations only

    parser = argparse.ArgumentParser(prog="xmdata", description=__doc__.splitlines()[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="environment (runtime/settings.py):\n  "
                                            + "\n  ".join(settings.describe())
                                            + "\n\ndocs: docs/ (./run docs serves them), every command: "
                                            "docs/reference/commands.md")
    parser.add_argument("-v", "--verbose", action="store_true", help="show Prefect's run logs")
    sub = parser.add_subparsers(dest="command", required=True)

    demo = sub.add_parser("demo", help="build the demo release from the shipped sample data, offline")
    demo.add_argument("--out", default="demo-release", help="release folder (default ./demo-release)")
    _add_run_options(demo)
    # service_early: the packaged config and sample have nothing to refuse, so the service starts
    # while the demo imports (runtime/run_setup.start_service_early)
    demo.set_defaults(shards=None, config="demo", seed=None, work=None, release_command=None, sample=False,
                      models="config", service_early=True)

    release = sub.add_parser("release", help="build a reproducible data release from a release.yaml; "
                             "`xmdata release verify DIR` checks one, `xmdata release compare A B` two")
    release.add_argument("--config", help="release.yaml, or a packaged config by name (demo)")
    release.add_argument("--out", help="release folder")
    release.add_argument("--work", default=None, help="build folder: shards and records (default OUT/build)")
    release.add_argument("--seed", type=seed_int, default=None, help="override the config's seed")
    release.add_argument("--sample", action="store_true",
                         help="build on the config's shipped sample inputs (its `sample:` section), offline")
    release.add_argument("--models", choices=MODEL_CHOICES, default="config",
                         help="config: the models the config names; tiny: the offline tiny models instead")
    _add_run_options(release)
    release.set_defaults(shards=None)  # the config's
    release_commands = release.add_subparsers(dest="release_command")
    verify = release_commands.add_parser("verify", help="check every file of a release against its manifest.json")
    verify.add_argument("dir")
    compare = release_commands.add_parser(
        "compare", help="are two releases the same data: files, rows, ids, texts and decisions equal, floats "
        "within --tolerance (release folders built on two machines); exit 1 on a difference, each printed")
    compare.add_argument("a", metavar="A", help="a release folder")
    compare.add_argument("b", metavar="B", help="the release folder to compare it with")
    compare.add_argument("--tolerance", type=float, default=TOLERANCE,
                         help="largest absolute difference between two floats taken as equal (default %(default)g)")

    up = sub.add_parser("up", help="start the xmdata service in the background: a Prefect server and a "
                        "warm Dask cluster on 127.0.0.1 that every later command reuses")
    up.add_argument("--workers", type=positive_int, default=None, help="worker processes (default: one per core)")
    up.add_argument("--dashboard", action="store_true",
                    help="serve the Dask dashboard on 127.0.0.1 (off by default: its pages ask for no password)")
    sub.add_parser("down", help="stop the xmdata service: workers, scheduler and Prefect server")
    worker = sub.add_parser("worker", help="Dask worker(s) for an existing scheduler; --gpu: one per "
                            "visible GPU, each advertising the resource GPU=1 (GPU stages run there)")
    worker.add_argument("address", help="the scheduler, tls://host:8786 (tcp:// only on a network you trust)")
    worker.add_argument("--gpu", action="store_true", help="one worker per visible GPU, each pinned to it")
    _add_tls_flags(worker, "for a tls:// scheduler (default: Dask's TLS config)")
    sub.add_parser("status", help="is the xmdata service up; its URLs, workers and loaded models")

    serve = sub.add_parser("serve", help="a Prefect server on 127.0.0.1 and a process serving the deployments "
                           "of prefect.yaml; Ctrl-C stops both")
    serve.add_argument("--host", default="127.0.0.1", help="server address (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=port_number, default=4200)
    serve.add_argument("--prefect-yaml", default=None, help="deployments file (default: the project's prefect.yaml)")
    serve.add_argument("--activate-schedules", action="store_true",
                       help="turn on the schedules prefect.yaml declares (off by default)")
    serve.add_argument("--api-url", default=None,
                       help="serve against an existing Prefect server instead of starting one (or PREFECT_API_URL)")

    lid = sub.add_parser("identify-language", help="label every text of a table with its language")
    lid.add_argument("input", help="Parquet, CSV or JSONL with columns id, text")
    lid.add_argument("--out", required=True)
    add_param_flags(lid, ParamFlags(LanguageIdParams))
    _add_run_options(lid)

    select = sub.add_parser("select-images", help="pick K geo-diverse images per language (Crossmodal-3600)")
    select.add_argument("input", help="table with id, latitude, longitude (Parquet/CSV/JSONL) or an image folder (EXIF GPS)")
    add_param_flags(select, ParamFlags(SelectImagesParams))
    select.add_argument("--seed", type=seed_int, default=0)
    select.add_argument("--strict", action="store_true", help="fail when a language gets fewer than K")
    select.add_argument("--out", required=True)
    _add_run_options(select)

    score = sub.add_parser("score", help="CLIPScore / RefCLIPScore of image-text pairs with open_clip")
    score.add_argument("input", help="pairs: id, text, image_path (under --image-root) or image_bytes [, language]")
    score.add_argument("--image-root", default=None, help="folder image paths are under (default: the input's)")
    score.add_argument("--references-column", default=None, help="list column of references: adds ref_clip_score")
    add_param_flags(score, ParamFlags(ScoringParams, skip=("embeddings",), aliases=_embeddings_flags))
    score.add_argument("--embeddings", action="store_true", help="also write image_embedding, text_embedding")
    score.add_argument("--embedding-dtype", choices=EMBEDDING_DTYPES, default=argparse.SUPPRESS,
                       help=f"with --embeddings (default {EMBEDDING_DTYPES[0]})")
    score.add_argument("--out", required=True)
    _add_run_options(score)

    add_translation_commands(sub, _add_run_options)
    from xmdata.commands_images import add_download_images_command  # pydantic only: --help stays light
    add_download_images_command(sub, _add_run_options)
    from xmdata.commands_clean import add_clean_commands  # pydantic only: --help stays light
    add_clean_commands(sub, _add_run_options)
    from xmdata.commands_explain import add_explain_command  # argparse only
    add_explain_command(sub)
    from xmdata.commands_explore import add_explore_command  # argparse only
    add_explore_command(sub)
    from xmdata.commands_train import add_train_commands  # pydantic only: --help stays light
    add_train_commands(sub, _add_run_options)

    validate = sub.add_parser("validate", help="check a table against a contract in schemas/")
    validate.add_argument("input")
    validate.add_argument("--table", default="captions", help="contract name (captions, images, …)")

    models = sub.add_parser("models", help="model utilities")
    models_sub = models.add_subparsers(dest="models_command", required=True)
    tiny = models_sub.add_parser("build-tiny", help="build tiny real-architecture models offline")
    tiny.add_argument("dir")
    tiny.add_argument("--seed", type=seed_int, default=0)
    from xmdata.cli_translate import add_convert_command
    add_convert_command(models_sub)

    from xmdata.cli_evaluate import add_evaluate_parser  # pydantic and argparse only: --help stays light
    add_evaluate_parser(sub)
    _add_import_parser(sub)
    _add_map_option(sub)
    from xmdata.commands_lock import add_lock_commands  # argparse only; after --map, which they do not take
    add_lock_commands(sub)
    from xmdata.cli_docs import name_docs  # argparse only
    name_docs(parser)
    return parser


def _add_import_parser(sub) -> None:
    from xmdata.tasks.importers.formats import FORMATS  # pure data
    from xmdata.tasks.importers.options import ImportOptions

    p = sub.add_parser("import", help="a public dataset's published layout -> the project's contract tables",
                       description="\n".join(f"{name}: {text}" for name, (_, text) in FORMATS.items()),
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("format", choices=list(FORMATS))
    p.add_argument("source", help="the downloaded file or folder, in its published layout")
    p.add_argument("--out", required=True, help="folder for <table>.parquet, rejects.parquet, import_report.json")
    p.add_argument("-q", "--quiet", action="store_true", help="no report on stdout (counts unlike the "
                   "publisher's are still said on stderr)")
    for name, field in ImportOptions.model_fields.items():
        flag = "--" + name.replace("_", "-")
        if field.annotation is bool:
            p.add_argument(flag, action="store_true", help=field.description)
        else:
            p.add_argument(flag, default=None, help=field.description)


def _add_map_option(sub) -> None:
    """`--map OLD=NEW,…` on every command that reads a table (schemas/column_map.py)."""
    for name, command in sub.choices.items():
        if name in ("serve", "models", "up", "down", "status", "worker", "explain", "explore", "train"):
            continue
        leaves = [command]
        for action in command._actions:  # argparse has no public way to list a parser's sub-commands
            if isinstance(action, argparse._SubParsersAction) and action.required:
                leaves = list(action.choices.values())
        for leaf in leaves:
            leaf.add_argument("--map", default=None, metavar="OLD=NEW,…",
                              help="rename input columns before the contract check, e.g. ImageID=id,Latitude=latitude")


def check_output_folder(path: str, flag: str) -> None:
    """An output folder that could never be written is refused before anything starts."""
    from xmdata.schemas import ContractError

    if os.path.exists(path) and not os.path.isdir(path):
        raise ContractError(f"{flag} {path}: exists and is not a folder")
    parent = os.path.dirname(os.path.abspath(path))
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise ContractError(f"{flag} {path}: {parent} is a file, not a folder")
    if not os.access(parent if not os.path.isdir(path) else path, os.W_OK | os.X_OK):
        raise ContractError(f"{flag} {path}: {parent if not os.path.isdir(path) else path} is not writable")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:  # an ill-typed option stops here: before any heavy import, server or worker
        args.params = params_from_args(args)
    except ValueError as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)  # as every refused input: one line, exit 2
        return EXIT_BAD_INPUT
    from xmdata.runtime.service_files import command_environment  # before Prefect and Dask read their config

    os.environ.update(command_environment(settings.child_env(), verbose=args.verbose))
    from xmdata.models.base import ModelError
    from xmdata.runtime.execution import ShardsFailed
    from xmdata.runtime.service import ServiceError
    from xmdata.runtime.storage import is_url, parse_storage_options, using_storage_options
    from xmdata.runtime.storage_check import check_location
    from xmdata.schemas import ContractError
    from xmdata.schemas.column_map import column_mapping

    try:
        with using_storage_options(parse_storage_options(getattr(args, "storage_option", None))):
            for flag in ("out", "work"):  # an output that cannot be written stops here, before any start
                if path := getattr(args, flag, None):
                    check = check_location if is_url(path) else check_output_folder
                    check(path, f"--{flag}")
            if getattr(args, "service_early", False):  # nothing of the user's left to check (the demo)
                from xmdata.runtime.run_setup import start_service_early

                start_service_early(args.executor, args.dask_address, (args.tls_ca_file, args.tls_cert, args.tls_key),
                                    args.quiet)
            from xmdata.commands import COMMANDS  # heavy imports start here, after the checks above

            with column_mapping(getattr(args, "map", None)) as mapping:
                code = COMMANDS[args.command](args) or 0
    except (ContractError, ModelError) as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except (ShardsFailed, ServiceError) as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)
        return EXIT_SHARDS_FAILED
    except KeyboardInterrupt:  # the stages stopped and said so (a Prefect run: Crashed); finished shards are kept
        print("xmdata: interrupted (finished shards are kept: the same command resumes from them)", file=sys.stderr)
        return EXIT_INTERRUPTED
    if unused := mapping.unused():
        print(f"xmdata: warning: --map: no input had a column named {', '.join(unused)}", file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
