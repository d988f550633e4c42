"""The publish flow: a release folder that verifies, to a Hugging Face dataset repo in one commit
(tasks/release/publish.py), so a scheduled build can publish after it. Its form is PublishOptions; the
token is never a parameter: the worker's huggingface_hub finds it (HF_TOKEN, `hf auth login`)."""
from __future__ import annotations

from prefect import flow

from xmdata.tasks.release.publish_options import PublishOptions


@flow(name="publish")
def publish_flow(release: str = "releases/demo", repo_id: str = "", options: PublishOptions | None = None) -> dict:
    """Publish RELEASE to REPO_ID (owner/name): verified first, one commit, no commit when the head holds
    this release_sha256 already, a tag when asked.

    Args:
        release: the release folder (`xmdata release --out`)
        repo_id: the dataset repo, owner/name
        options: revision, tag, private, dry_run

    Docs: docs/how-to/publish.md; every option: docs/reference/commands.md#publish.
    """
    from prefect.logging import get_run_logger

    from xmdata.tasks.release.publish import publish

    logger = get_run_logger()
    return publish(release, repo_id, options or PublishOptions(), say=logger.info)
