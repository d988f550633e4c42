"""`xmdata publish RELEASE REPO_ID`: a release that verifies, in one commit of a Hugging Face dataset repo
(tasks/release/publish.py); the options are PublishOptions' fields, as the publish flow's form."""
from __future__ import annotations

import argparse
import sys

from xmdata.cli_command import Command
from xmdata.cli_params import ParamFlags, add_param_flags
from xmdata.exit_codes import FAILED, OK
from xmdata.tasks.release.publish_options import PublishOptions


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("release", metavar="RELEASE", help="a release folder (`xmdata release --out`); `release verify` must pass")
    p.add_argument("repo_id", metavar="REPO_ID", help="the dataset repo, owner/name (created when missing)")
    add_param_flags(p, ParamFlags(PublishOptions))


def publish(args: argparse.Namespace) -> int:
    from xmdata.tasks.release.publish import PublishFailed, publish as publish_release

    try:
        publish_release(args.release, args.repo_id, args.params)
    except PublishFailed as exc:
        print(f"xmdata: error: {exc}", file=sys.stderr)
        return FAILED
    return OK


PUBLISH = Command("publish", "publish a release to a Hugging Face dataset repo in one commit: idempotent, tagged, "
                  "resumable (the token is huggingface_hub's: HF_TOKEN or `hf auth login`)", add_arguments, publish,
                  guide="how-to/publish.md")
