"""`xmdata explain`: one row's path through every stage of a release or work folder."""
from __future__ import annotations

import argparse
import json
import math

from xmdata.cli_command import Command


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("folder", help="a release (its build folder is read when there, else the published "
                                  "tables) or a work folder (a release's build, a command's --out)")
    p.add_argument("id", help="a caption, image, QA instance or pair id (`<caption id>@<target>` for a "
                              "translation's pair)")
    p.add_argument("--build", default=None, metavar="DIR",
                   help="the release's build folder, when it is not the one its manifest names (--work of "
                        "`xmdata release`); refused if its records belong to another build")
    p.add_argument("--json", action="store_true", help="the trace as JSON, for scripts")


def explain(args: argparse.Namespace) -> int:
    from xmdata.tasks.explain.explain import explain as explain_row
    from xmdata.tasks.explain.text import explanation_text

    explanation = explain_row(args.folder, args.id, args.build)
    if args.json:
        print(json.dumps(_finite(explanation.to_dict()), indent=2, ensure_ascii=False, default=str))
    else:
        print(explanation_text(explanation))
    return 0


def _finite(value):
    """NaN and infinities as null: JSON has no such numbers (json.dumps would write `NaN`)."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


EXPLAIN = Command("explain", "one row's path through every stage: its input, each stage's outcome (kept, rejected "
                  "and why, the values it added), params and model", add_arguments, explain, guide="how-to/explain.md")
