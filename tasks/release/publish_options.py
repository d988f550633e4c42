"""The options of `xmdata publish` (tasks/release/publish.py), declared once: the command's flags and the
publish flow's form. Light (pydantic only), for --help. No token among them: huggingface_hub finds it in
its own places (HF_TOKEN, `hf auth login`), and it is never a parameter, a flag or a file of ours. Nor the Hub's address: huggingface_hub's own
HF_ENDPOINT (default https://huggingface.co), which the tests point at their stand-in."""
from __future__ import annotations

from pydantic import Field

from xmdata.runtime.params import Strict

REPO_ID = r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$"


class PublishOptions(Strict):
    revision: str = Field("main", min_length=1, description="the branch the commit goes to (made from main when "
                          "missing)")
    tag: str | None = Field(None, min_length=1, description="tag the commit (a tag on another release_sha256 is "
                            "refused)")
    private: bool = Field(False, description="create the repo private (an existing repo keeps its visibility)")
    dry_run: bool = Field(False, description="list what would be added, changed and deleted, with sizes; send nothing")
