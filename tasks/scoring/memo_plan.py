"""`xmdata score --dry-run`: how many image and text embeddings a build would compute, and how many
the memo of model work already holds — from the memo's index and the images' bytes (read and hashed,
never decoded), before any model loads. Counts are of distinct images (by content) and distinct texts
(prefix included) in the whole input; an image the build then refuses (outside the root, over the
pixel limit, unreadable) is counted here, so `to compute` is an upper bound."""
from __future__ import annotations

import pyarrow as pa

from xmdata.runtime import memo
from xmdata.tasks.build.image_decode import image_digests
from xmdata.tasks.build.unit_memo import memo_for
from xmdata.tasks.scoring.pairs import collect_pairs
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.scoring.score_memo import IMAGE_KIND, TEXT_KIND
from xmdata.tasks.stage_params import ScoringParams


def score_memo_plan(pairs: pa.Table, params: ScoringParams, image_root: str | None, references_column: str | None,
                    options: memo.MemoOptions) -> dict:
    stage = clip_score_stage(params, params.spec(), image_root, references_column)
    collected = collect_pairs(pairs, references_column, params.prefix)
    digests = sorted({d for d in image_digests(list(collected.images), image_root) if d})
    plan = {"location": options.location, "units": {}}
    with memo.shard_scope(options, stage.code_version, stage.memo_params):
        for kind, inputs in ((IMAGE_KIND, [[d] for d in digests]), (TEXT_KIND, [[t] for t in collected.texts])):
            unit_memo = memo_for(kind, stage.params.model)
            held = sum(unit_memo.holds(inputs)) if unit_memo is not None and inputs else 0
            plan["units"][kind] = {"units": len(inputs), "in_memo": held, "to_compute": len(inputs) - held}
    return plan


def plan_text(plan: dict) -> str:
    rows = {"images" if kind == IMAGE_KIND else "texts": row for kind, row in plan["units"].items()}
    return memo.dry_run_text(plan["location"], ("embeddings", "distinct"), rows,
                             "embedding(s) to compute (images the build refuses are not computed)")
