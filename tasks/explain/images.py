"""An image's path: ingest, geocoding (country, region, continent) and the geo-diverse selection:
the languages it was picked for, each with its back-off level (region, country, continent, global)."""
from __future__ import annotations

from .clean import clean_steps
from .folders import Folders
from .lookup import find_rows, stage_params
from .steps import first_row, found, rows_of, stage_step
from .trace import Step, Trace

PLACE = ["country", "admin1", "continent", "geo_place_km", "geo_flag"]


def image_trace(folders: Folders, image_id: str) -> Trace | None:
    steps, rows = clean_steps(folders, image_id), []
    for stage, added in (("images", []), ("geocode", PLACE)):
        if made := stage_step(folders, stage, stage, image_id, added):
            steps.append(made[0])
            rows.append(made[1])
    picked = selection_step(folders, image_id, seen=found(steps))
    if picked and (refused := [s.stage for s in steps if s.outcome == "rejected"]):
        picked[0].reason = f"not a candidate: refused at {refused[0]}"
    if picked:
        steps.append(picked[0])
        rows.append(picked[1])
    if not found(steps):
        return None
    return Trace("image", image_id, first_row(*rows, drop=tuple(PLACE) + ("language", "level", "strategy", "seed")),
                 steps)


def selection_step(folders: Folders, image_id: str, seen: bool) -> tuple[Step, dict | None] | None:
    """The languages the image was picked for; not_selected only for an image the build had (`seen`)."""
    paths = folders.table_paths("selection")
    picks = find_rows(paths, "image_id", image_id)
    if not paths or not (seen or picks.height):
        return None
    other = find_rows(folders.table_paths("selection_optimal"), "image_id", image_id)
    step = Step("image_selection", "kept" if picks.height else "rejected", params=stage_params(folders, "image_selection"))
    if not picks.height:
        step.reason = "not_selected: not among the images picked for any language"
    else:
        step.values = {"level": {r["language"]: r["level"] for r in picks.sort("language").to_dicts()},
                       "strategy": picks["strategy"][0], "seed": picks["seed"][0],
                       **{k: picks[k][0] for k in PLACE if k in picks.columns}}
    if other.height:
        step.values[f"level ({other['strategy'][0]}, beside)"] = {
            r["language"]: r["level"] for r in other.sort("language").to_dicts()}
    row = rows_of(picks.head(1))[0] if picks.height else None
    return step, ({"id": image_id, **{k: v for k, v in row.items() if k != "image_id"}} if row else None)
