"""The options of `xmdata publish` (tasks/release/publish.py), declared once: the command's flags and the
publish flow's form. Light (pydantic only), for --help. No token among them: huggingface_hub finds it in
its own places (HF_TOKEN, `hf auth login`), and it is never a parameter, a flag or a file of ours. Nor the Hub's address: huggingface_hub's own
HF_ENDPOINT (default https://huggingface.co), which the tests point at their stand-in."""
from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, Field

from xmdata.runtime.params import Strict

REPO_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$"
# git's ref-name rules (git-check-ref-format(1), "a branch or tag name"), which the Hub's refs follow:
_REF_FORBIDDEN = re.compile(r"[\x00-\x20\x7f~^:?*\[\\]|\.\.|@\{|//")


def ref_name(name: str) -> str:
    """NAME as a branch or tag name git accepts (git-check-ref-format): ValueError naming the rule it breaks."""
    why = ("has a space, control character or one of ~ ^ : ? * [ \\, or '..', '@{' or '//'"
           if _REF_FORBIDDEN.search(name) else
           "begins or ends with '/'" if name.startswith("/") or name.endswith("/") else
           "ends with '.'" if name.endswith(".") else
           "is '@'" if name == "@" else
           "has a part that begins with '.' or ends with '.lock'"
           if any(part.startswith(".") or part.endswith(".lock") for part in name.split("/")) else None)
    if why:
        raise ValueError(f"{name!r} is no git branch or tag name: it {why} (git-check-ref-format)")
    return name


RefName = Annotated[str, Field(min_length=1, max_length=255), AfterValidator(ref_name)]


class PublishOptions(Strict):
    revision: RefName = Field("main", description="the branch the commit goes to (made from main when missing); "
                              "a git branch name")
    tag: RefName | None = Field(None, description="tag the commit (a tag on another release_sha256 is refused); a "
                                "git tag name")
    private: bool = Field(False, description="create the repo private (an existing repo keeps its visibility)")
    dry_run: bool = Field(False, description="list what would be added, changed and deleted, with sizes; send nothing")
