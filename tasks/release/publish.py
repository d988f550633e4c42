"""`xmdata publish RELEASE REPO_ID`: a release that verifies, in one commit of a Hugging Face dataset repo,
through huggingface_hub's public API (HfApi: create_repo, repo_info, list_repo_refs, list_repo_tree,
preupload_lfs_files, create_commit with parent_commit, create_tag).

The commit adds or changes the paths the manifest lists (and manifest.json), deletes the `data/` and
`rejects/` files the release no longer has, and leaves every other path alone. A head whose manifest.json
holds this release_sha256 gets no commit. Large files are pre-uploaded first, so a killed publish run
again sends nothing the Hub already holds (its LFS batch API answers that it has them). Transient answers
(429, 5xx, a dropped connection) are retried with backoff, at most ATTEMPTS retries and RETRY_SECONDS in
all; a head that moved meanwhile (412) is read again: a commit that changed a path the release lists
refuses the publish, any other is built on. The token is huggingface_hub's (`get_token`: HF_TOKEN, `hf
auth login`), passed to HfApi and nowhere else: never printed, logged, written or a flow's parameter.
Nothing here ran against the real Hub: the tests use a stand-in of its HTTP API on 127.0.0.1."""
from __future__ import annotations

import json
import os
import re
import tempfile
from typing import Callable

from xmdata import __version__
from xmdata.schemas.contract import ContractError

from .manifest import MANIFEST, read_manifest, verify_release
from .publish_options import REPO_ID, PublishOptions
from .publish_plan import LocalFile, Plan, landed, plan_commit, remote_ids
from .publish_retries import ATTEMPTS, PublishFailed, Retries, status_of

REPO_TYPE = "dataset"
# The Hub's storage limits (https://huggingface.co/docs/hub/storage-limits, "Repository limitations and
# recommendations"; hub-docs' datasets upload guide: "Per file: 50GB max, 20GB recommended; Per folder:
# <10k files").
MAX_FILE_BYTES = 50 * 1000**3
MAX_FOLDER_ENTRIES = 10_000
REFUSED = (400, 404, 409, 422)  # the Hub refusing the request itself (bad input, exit 2); 429, 5xx: retried, exit 1


def release_to_publish(release: str, repo_id: str) -> tuple[dict, dict[str, LocalFile]]:
    """(manifest, {path in repo: file}) of a RELEASE that verifies; ContractError in one line for a bad
    repo id, a release that does not verify, or a file or folder over the Hub's limits."""
    if not re.fullmatch(REPO_ID, repo_id) or ".." in repo_id or "--" in repo_id:
        raise ContractError(f"repo id {repo_id!r}: not owner/name (letters, digits, '-', '_', '.')")
    if problems := verify_release(release):
        raise ContractError(f"{release}: does not verify against its manifest ({len(problems)} problem(s), first: "
                            f"{problems[0]}); `xmdata release verify {release}` lists them")
    from xmdata.runtime.atomic import sha256_file

    manifest = read_manifest(release)
    files = {name: LocalFile(os.path.join(release, name), e["bytes"], e["sha256"])
             for name, e in manifest["release"]["files"].items()}
    path = os.path.join(release, MANIFEST)
    files[MANIFEST] = LocalFile(path, os.path.getsize(path), sha256_file(path))
    check_limits(files)
    return manifest, files


def check_limits(files: dict[str, LocalFile]) -> None:
    big = [f"{name} ({f.size:,} bytes)" for name, f in sorted(files.items()) if f.size > MAX_FILE_BYTES]
    if big:
        raise ContractError(f"{big[0]}: over the Hub's per-file limit of {MAX_FILE_BYTES // 1000**3} GB "
                            f"(https://huggingface.co/docs/hub/storage-limits)" + (f", and {len(big) - 1} more"
                                                                                   if len(big) > 1 else ""))
    entries: dict[str, set[str]] = {}
    for name in files:
        parts = name.split("/")
        for depth in range(len(parts)):
            entries.setdefault("/".join(parts[:depth]) or ".", set()).add(parts[depth])
    crowded = sorted((folder, len(names)) for folder, names in entries.items() if len(names) > MAX_FOLDER_ENTRIES)
    if crowded:
        raise ContractError(f"{crowded[0][0]}/: {crowded[0][1]:,} entries, over the Hub's {MAX_FOLDER_ENTRIES:,} per "
                            f"folder (https://huggingface.co/docs/hub/storage-limits)")


def hub_token() -> str:
    """huggingface_hub's own token (HF_TOKEN, else `hf auth login`'s file); ContractError without one."""
    from huggingface_hub import get_token

    token = get_token()
    if not token:
        raise ContractError("no Hugging Face token: set HF_TOKEN or run `hf auth login` (a token with write access)")
    return token


class Hub:
    """The repo through HfApi, each call under the publish's retries."""

    def __init__(self, repo_id: str, options: PublishOptions, token: str, retries: Retries):
        from huggingface_hub import HfApi

        self.repo_id, self.options, self.retries = repo_id, options, retries
        self.api = HfApi(token=token, library_name="xmdata", library_version=__version__)

    def call(self, what: str, method: str, **kwargs):
        return self.retries.run(what, lambda: getattr(self.api, method)(repo_id=self.repo_id, repo_type=REPO_TYPE,
                                                                         **kwargs))

    def exists(self) -> bool:
        return self.call("repo", "repo_exists")

    def head(self, create: bool) -> str | None:
        """The commit the branch points at; a missing branch is made from main when CREATE, else None."""
        from huggingface_hub.errors import RevisionNotFoundError

        try:
            return self.call("head", "repo_info", revision=self.options.revision).sha
        except RevisionNotFoundError:
            if not create:
                return None
        self.call("branch", "create_branch", branch=self.options.revision, exist_ok=True)
        return self.call("head", "repo_info", revision=self.options.revision).sha

    def tree(self, revision: str | None) -> dict[str, tuple[str, int]]:
        if revision is None:
            return {}
        return remote_ids(self.retries.run("tree", lambda: list(self.api.list_repo_tree(
            self.repo_id, repo_type=REPO_TYPE, revision=revision, recursive=True))))

    def release_sha256_at(self, revision: str, tree: dict) -> str | None:
        """release_sha256 of the manifest.json at REVISION (None: none, or not a manifest)."""
        if MANIFEST not in tree:
            return None
        with tempfile.TemporaryDirectory(prefix="xmdata-publish-") as folder:
            path = self.call("manifest", "hf_hub_download", filename=MANIFEST, revision=revision, local_dir=folder)
            try:
                with open(path, encoding="utf-8") as f:
                    return json.load(f).get("release_sha256")
            except (OSError, ValueError, AttributeError):
                return None

    def tag_target(self, tag: str) -> str | None:
        refs = self.call("refs", "list_repo_refs")
        return next((t.target_commit for t in refs.tags if t.name == tag), None)


def publish(release: str, repo_id: str, options: PublishOptions, say: Callable[[str], None] = print) -> dict:
    """Publish RELEASE to REPO_ID as options say; returns what happened (commit None: none was needed)."""
    from huggingface_hub.errors import HfHubHTTPError

    manifest, files = release_to_publish(release, repo_id)
    token, retries = hub_token(), Retries()
    hub, sha, where = Hub(repo_id, options, token, retries), manifest["release_sha256"], f"{repo_id}@{options.revision}"
    result = {"repo_id": repo_id, "revision": options.revision, "release_sha256": sha, "commit": None,
              "added": 0, "changed": 0, "deleted": 0, "tag": None}
    try:
        exists = hub.exists()
        if not exists and options.dry_run:
            plan = plan_commit(files, {}, None)
            say("\n".join([f"{where}: no such repo yet; publishing would create it and:", *plan.lines(), plan.summary()]))
            return result | {"dry_run": plan.lines()}
        if not exists:
            retries.run("create repo", lambda: hub.api.create_repo(repo_id, repo_type=REPO_TYPE, private=options.private,
                                                                   exist_ok=True))
        if options.tag and (target := hub.tag_target(options.tag)):  # refused before anything is sent
            tagged = hub.release_sha256_at(target, hub.tree(target))
            if tagged != sha:
                raise ContractError(f"tag {options.tag} of {repo_id} is on commit {target[:12]}, which holds "
                                    f"release_sha256 {tagged or 'none'}, not this release's {sha}")
        head = hub.head(create=not options.dry_run)
        if head is None and options.dry_run:  # a branch the publish would make from main: planned on main's head
            head = hub.call("head", "repo_info", revision="main").sha
            where += f" (a new branch from main {head[:12]})"
        remote = hub.tree(head)
        if head and hub.release_sha256_at(head, remote) == sha:
            say(f"{where}: commit {head[:12]} already holds release_sha256 {sha}; no commit made")
            return result | ({} if options.dry_run else _tag(hub, options, head, manifest, say)) | {"head": head}
        plan = plan_commit(files, remote, head)
        if options.dry_run:
            say("\n".join([f"{where} (head {head[:12] if head else 'none'}): publishing would", *plan.lines(),
                           plan.summary()]))
            return result | {"dry_run": plan.lines()}
        commit = _commit(hub, files, plan, manifest, remote, say)
        say(f"{where}: commit {commit[:12]}: {len(plan.add)} added, {len(plan.change)} changed, "
            f"{len(plan.delete)} deleted; release_sha256 {sha}")
        return result | {"commit": commit, "added": len(plan.add), "changed": len(plan.change),
                         "deleted": len(plan.delete)} | _tag(hub, options, commit, manifest, say)
    except (ContractError, PublishFailed):
        raise
    except (HfHubHTTPError, OSError, RuntimeError, ValueError) as exc:
        from huggingface_hub.errors import RepositoryNotFoundError

        status = status_of(exc)
        if isinstance(exc, RepositoryNotFoundError):
            raise ContractError(f"{where}: the Hub has no repo {repo_id} this token may write to (HTTP {status}: "
                                f"{_first_line(exc)})") from None
        if status in (401, 403):  # the token, not the network: nothing a rerun would change
            raise ContractError(f"{where}: the Hub refused the token (HTTP {status}); give one with write access to "
                                f"{repo_id.split('/')[0]} (HF_TOKEN or `hf auth login`)") from None
        if status in REFUSED:  # the request itself: the same command would be refused again
            raise ContractError(f"{where}: the Hub refused the request (HTTP {status}: {_first_line(exc)}); check "
                                f"the repo id, --revision and --tag") from None
        raise PublishFailed(f"publish to {where} failed after {ATTEMPTS - retries.left} retries "
                            f"({f'HTTP {status}' if status else type(exc).__name__}: {_first_line(exc)}): no commit "
                            f"was made, the Hub keeps what it had and any large file already sent; the same command "
                            f"resumes") from None


def _commit(hub: Hub, files: dict[str, LocalFile], plan: Plan, manifest: dict, read: dict, say) -> str:
    """Pre-upload the large files, then one commit on the head that was read; a moved head (412) is read
    again: refused if another commit changed a path the release lists, else planned and committed anew."""
    from huggingface_hub import CommitOperationAdd, CommitOperationDelete
    from huggingface_hub.errors import HfHubHTTPError

    sha, body = manifest["release_sha256"], manifest["release"]
    while True:
        additions = [CommitOperationAdd(path_in_repo=name, path_or_fileobj=files[name].path)
                     for name in sorted({**plan.add, **plan.change})]
        hub.call("preupload", "preupload_lfs_files", additions=additions, revision=hub.options.revision)
        operations = [*additions, *(CommitOperationDelete(path_in_repo=name) for name in sorted(plan.delete))]
        try:
            info = hub.call("commit", "create_commit", operations=operations, revision=hub.options.revision,
                            parent_commit=plan.head,
                            commit_message=f"{body['name']} {body['version']}: release_sha256 {sha}",
                            commit_description=f"Published by xmdata {__version__} from a release that verified "
                                               f"against its manifest.json (release_sha256 {sha}).")
            return info.oid
        except HfHubHTTPError as exc:
            if status_of(exc) != 412 or hub.retries.left == 0:
                raise
        hub.retries.left -= 1
        head = hub.head(create=False)
        if head is None:
            raise PublishFailed(f"{hub.repo_id}@{hub.options.revision}: the branch was deleted while publishing; no "
                                f"commit of this release is on it; publish again to make it anew")
        now = hub.tree(head)
        if landed(files, now) and hub.release_sha256_at(head, now) == sha:
            # our own commit: it landed, and its answer was lost (the retried create_commit then found a moved head)
            say(f"{hub.repo_id}@{hub.options.revision}: commit {head[:12]} holds this release (its answer was lost on "
                f"the way back)")
            return head
        moved = sorted(name for name in files if now.get(name) != read.get(name))
        if moved:
            raise PublishFailed(f"{hub.repo_id}@{hub.options.revision} moved to {head[:12]} while publishing, and that "
                                f"commit changed {len(moved)} path(s) this release lists ({moved[0]}…): refused; "
                                f"look at the repo, then publish again")
        say(f"{hub.repo_id}@{hub.options.revision}: the head moved to {head[:12]} (paths of this release untouched); "
            f"committing on it")
        plan, read = plan_commit(files, now, head), now


def _tag(hub: Hub, options: PublishOptions, commit: str, manifest: dict, say) -> dict:
    if not options.tag:
        return {}
    if hub.tag_target(options.tag):  # checked before: it names this release already
        return {"tag": options.tag}
    body = manifest["release"]
    hub.call("tag", "create_tag", tag=options.tag, revision=commit,
             tag_message=f"{body['name']} {body['version']}: release_sha256 {manifest['release_sha256']} "
                         f"(xmdata {__version__})")
    say(f"{hub.repo_id}: tag {options.tag} on commit {commit[:12]}")
    return {"tag": options.tag}


def _first_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text[:300]
