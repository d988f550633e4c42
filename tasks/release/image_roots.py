"""Where the images of a release's tables are: the folder each table's `image_path` values are relative
to, recorded by the build in its own folder (WORK/image_roots.json), never in the release's checksummed
files (the paths are this machine's: a release built twice in two places has the same bytes).

A recipe that reads images from a release (`xmdata train clipscore`) finds them there when the release
still has its build folder beside it (the manifest's `work_folder`); a copied release without one needs
its images named (--image-root)."""
from __future__ import annotations

import json
import os

from xmdata.runtime.atomic import write_json_atomic

IMAGE_ROOTS = "image_roots.json"


def record_image_roots(work: str, roots: dict[str, str]) -> None:
    """{release table: absolute folder its image paths are under} for the tables this build made."""
    write_json_atomic({table: os.path.abspath(root) for table, root in sorted(roots.items())},
                      os.path.join(work, IMAGE_ROOTS))


def recorded_image_root(release: str, table: str) -> str | None:
    """The folder TABLE's image paths are under, as the release's build recorded it; None when the
    release has no build folder beside it, the build recorded none for TABLE, or the folder is gone."""
    from xmdata.schemas.contract import ContractError
    from xmdata.tasks.release.manifest import read_manifest

    try:
        work = read_manifest(release)["release"].get("work_folder")
    except ContractError:  # no manifest: the caller refuses the release on its own terms
        return None
    path = os.path.join(release, work, IMAGE_ROOTS) if work else None
    if not path or not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        root = json.load(handle).get(table)
    return root if root and os.path.isdir(root) else None
