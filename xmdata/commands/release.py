"""`xmdata demo`, `xmdata release` and its `verify` and `compare`: build a reproducible data release
from a release.yaml, check one against its manifest, compare two."""
from __future__ import annotations

import argparse
import sys

from xmdata.cli_command import Command
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.cli_options import add_run_options, seed_int
from xmdata.exit_codes import FAILED, OK
from xmdata.tasks.release.choices import MODEL_CHOICES
from xmdata.tasks.release.compare import TOLERANCE
from xmdata.tasks.release.image_options import ImageEmbedding

GUIDE = "how-to/releases.md"
IMAGE_FLAGS = ParamFlags(ImageEmbedding)  # --embed-images, --image-max-side


def add_demo_arguments(demo: argparse.ArgumentParser) -> None:
    demo.add_argument("--out", default="demo-release", help="release folder (default ./demo-release)")
    add_run_options(demo)
    add_param_flags(demo, IMAGE_FLAGS)
    # service_early: the packaged config and sample have nothing to refuse, so the service starts
    # while the demo imports (service/run_setup.start_service_early)
    demo.set_defaults(shards=None, config="demo", seed=None, work=None, release_command=None, sample=False,
                      models="config", service_early=True)


def add_release_arguments(release: argparse.ArgumentParser) -> None:
    release.add_argument("--config", help="release.yaml, or a packaged config by name (demo)")
    release.add_argument("--out", help="release folder")
    release.add_argument("--work", default=None, help="build folder: shards and records (default OUT/build)")
    release.add_argument("--seed", type=seed_int, default=None, help="override the config's seed")
    release.add_argument("--sample", action="store_true",
                         help="build on the config's shipped sample inputs (its `sample:` section), offline")
    release.add_argument("--models", choices=MODEL_CHOICES, default="config",
                         help="config: the models the config names; tiny: the offline tiny models instead")
    add_run_options(release)
    add_param_flags(release, IMAGE_FLAGS)  # --embed-images, --image-max-side: over the config's keys
    release.set_defaults(shards=None)  # the config's


def release(args: argparse.Namespace) -> int:
    """`xmdata demo` is the release of the packaged demo config."""
    from xmdata.flow_run import run_flow
    from xmdata.schemas import ContractError

    if not args.config or not args.out:
        raise ContractError("xmdata release needs --config FILE and --out DIR "
                            "(or: xmdata release verify DIR, xmdata release compare A B)")
    from xmdata.flows.release import checked_release_flow
    from xmdata.flows.release_preflight import checked_release
    from xmdata.tasks.release.upload import release_folders

    # A broken config, input or model stops here, before any server starts; the flow runs on what was checked.
    images = args.params.given() if getattr(args, "params", None) is not None else None
    checked = checked_release(args.config, args.shards, args.seed, args.sample, args.models, args.work, images)
    _, _, work = release_folders(args.out, args.work)
    result = run_flow(checked_release_flow, args, summary_dir=work, cluster=checked.config.cluster, release=checked,
                      work=work)
    print(f"release {result['release']}: {result['files']} files, release_sha256 {result['release_sha256']}")
    return 0


def verify(args: argparse.Namespace) -> int:
    from xmdata.runtime import storage
    from xmdata.tasks.release.manifest import verify_release
    from xmdata.tasks.release.upload import verify_remote_release

    problems = (verify_remote_release if storage.is_url(args.dir) else verify_release)(args.dir)
    for line in problems:
        print(f"{args.dir}: {line}", file=sys.stderr)
    print(f"{args.dir}: {'differs from its manifest' if problems else 'every file matches its manifest'}")
    return FAILED if problems else OK


def add_compare_arguments(compare: argparse.ArgumentParser) -> None:
    compare.add_argument("a", metavar="A", help="a release folder")
    compare.add_argument("b", metavar="B", help="the release folder to compare it with")
    compare.add_argument("--tolerance", type=float, default=TOLERANCE,
                         help="largest absolute difference between two floats taken as equal (default %(default)g)")


def compare(args: argparse.Namespace) -> int:
    from xmdata.tasks.release.compare import compare_releases

    comparison = compare_releases(args.a, args.b, args.tolerance)  # not a release: ContractError, exit 2
    for line in comparison.lines():
        print(line, file=sys.stderr)
    if comparison.differences:
        print(f"{args.a} (A) and {args.b} (B) differ: {comparison.differences} difference(s), floats "
              f"within {comparison.tolerance:g} taken as equal")
        return FAILED
    print("\n".join(comparison.summary()))
    return 0


DEMO = Command("demo", "build the demo release from the shipped sample data, offline", add_demo_arguments, release,
               reads_tables=True, guide=GUIDE)
RELEASE = Command(
    "release", "build a reproducible data release from a release.yaml; `xmdata release verify DIR` checks one, "
    "`xmdata release compare A B` two", add_release_arguments, release, reads_tables=True, guide=GUIDE,
    subcommand_dest="release_command", subcommand_required=False, subcommands=(
        Command("verify", "check every file of a release against its manifest.json",
                lambda p: p.add_argument("dir"), verify),
        Command("compare", "are two releases the same data: files, rows, ids, texts and decisions equal, floats "
                "within --tolerance (release folders built on two machines); exit 1 on a difference, each printed",
                add_compare_arguments, compare),
    ))
