"""Building a paper recipe of data/releases/ on its shipped samples with the tiny models, in this process."""
import json
import os

from xmdata.data import DATA_DIR

RECIPES = os.path.join(DATA_DIR, "releases")


def build_recipe(name: str, out) -> dict:
    """`xmdata release --config data/releases/NAME.yaml --sample --models tiny --out OUT`, run in-process."""
    from xmdata.flows.release import release_flow
    from xmdata.runtime.session import execution_session

    with execution_session("inprocess"):
        result = release_flow(config=os.path.join(RECIPES, f"{name}.yaml"), out=str(out), sample=True, models="tiny")
    result["manifest"] = json.load(open(os.path.join(str(out), "manifest.json"), encoding="utf-8"))
    result["card"] = open(os.path.join(str(out), "README.md"), encoding="utf-8").read()
    return result
