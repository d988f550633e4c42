"""The model card of a trained model: which release trained it (its name and release_sha256 from its
manifest.json), the recipe, its params and the run's figures; README.md for people, model_card.json
for programs, both in the model folder."""
from __future__ import annotations

import json
import os

from xmdata.runtime.owner_only import write_private

CARD_JSON = "model_card.json"


def release_identity(release: str) -> dict:
    """{"name", "path", "release_sha256"} of RELEASE, read from its manifest (ContractError in one line)."""
    from xmdata.tasks.release.manifest import read_manifest

    manifest = read_manifest(release)
    return {"name": manifest["release"].get("name") or os.path.basename(os.path.abspath(release)),
            "path": os.path.abspath(release), "release_sha256": manifest.get("release_sha256")}


def release_table(release: str, name: str, what: str, recipe: str, columns: tuple[str, ...], hint: str = ""):
    """RELEASE/data/NAME.parquet with COLUMNS, or a one-line ContractError naming what is missing."""
    import pyarrow.parquet as pq

    from xmdata.schemas.contract import ContractError

    path = os.path.join(release, "data", f"{name}.parquet")
    if not os.path.isfile(path):
        raise ContractError(f"{release}: the release has no {name} table (data/{name}.parquet, {what} "
                            f"`{recipe}` learns from){hint}")
    table = pq.read_table(path)
    missing = [c for c in columns if c not in table.column_names]
    if missing:
        raise ContractError(f"{path}: the {name} table lacks column(s) {', '.join(missing)}")
    return table


def write_model_card(model_dir: str, *, recipe: str, release: dict, params: dict, figures: dict,
                     description: str, leaves_out: str = "") -> dict:
    """model_card.json and README.md in model_dir; returns the card."""
    card = {"recipe": recipe, "release": release, "params": params, "figures": figures,
            "description": description, "leaves_out": leaves_out}
    write_private(os.path.join(model_dir, CARD_JSON), json.dumps(card, indent=2, sort_keys=True) + "\n")
    lines = [f"# {recipe}: trained by xmdata", "", description, "",
             f"- release: {release['name']} (release_sha256 `{release['release_sha256']}`)",
             *(f"- {key}: {value}" for key, value in sorted(figures.items())), ""]
    if leaves_out:
        lines += ["## What this stand-in leaves out", "", leaves_out, ""]
    lines += ["## Params", "", "```json", json.dumps(params, indent=2, sort_keys=True), "```", ""]
    write_private(os.path.join(model_dir, "README.md"), "\n".join(lines))
    return card
