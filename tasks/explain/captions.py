"""A caption's path: ingest, language ID, translation into every target, and CLIPScore of it and of
each kept translation (`<caption id>@<target>`); a pair id alone: its pair and its score."""
from __future__ import annotations

from .clean import clean_steps
from .folders import Folders
from .lookup import memo_use_of
from .steps import first_row, found, stage_step
from .trace import Step, Trace
from .translation import translation_steps

SCORES = ["image_id", "status", "error_message", "clip_score", "ref_clip_score", "text_truncated"]


def caption_trace(folders: Folders, caption_id: str) -> Trace | None:
    steps, rows = clean_steps(folders, caption_id), []
    for stage, table, added in (("captions", "captions", []), ("language_id", "language_id", ["lid_label", "lid_prob"]),
                                ("texts", "texts", [])):
        if made := stage_step(folders, stage, table, caption_id, added):
            steps.append(made[0])
            rows.append(made[1])
    steps += translation_steps(folders, caption_id)
    scored, pair = score_steps(folders, caption_id)
    rows.append(pair)
    if not found(steps):
        return None
    kept = {s.stage.split("-> ")[1].split(":")[0] for s in steps
            if s.stage.startswith("select_translations") and s.outcome == "kept"}
    for target in sorted(kept):  # a kept translation's pair, when the build scored it
        more = score_steps(folders, f"{caption_id}@{target}")[0]
        scored += more if found(more) else []
    return Trace("caption", caption_id, first_row(*rows, drop=("lid_label", "lid_prob", *SCORES[1:])), steps + scored)


def pair_trace(folders: Folders, pair_id: str) -> Trace | None:
    """An image–text pair: a caption's own id, or `<caption id>@<target>` for its kept translation."""
    steps, row = score_steps(folders, pair_id)
    caption, _, target = pair_id.rpartition("@")
    before = [s for s in translation_steps(folders, caption, target) if s.stage.startswith("select")] if caption else []
    if not found(steps + before):  # a rejected translation has no pair: its selection step says why
        return None
    return Trace("pair", pair_id, row, before + steps)


def score_steps(folders: Folders, pair_id: str) -> tuple[list[Step], dict | None]:
    """pairs (the scoring input) and clip_score; (steps, the pair as ingested)."""
    steps, row = [], None
    for stage, added in (("pairs", []), ("clip_score", SCORES)):
        if made := stage_step(folders, stage, stage, pair_id, added):
            made[0].stage += f" [{pair_id}]" if "@" in pair_id else ""
            steps.append(made[0])
            row = row or made[1]
            if stage == "clip_score" and row and (said := embeddings_reused(
                    memo_use_of(folders, "clip_score", made[0].record), row)):
                made[0].values["model results"] = said
    return steps, row


def embeddings_reused(use: dict | None, pair: dict) -> str | None:
    """Whether the pair's image and text embeddings came from the memo in the build (score_memo.py),
    or None when the build did not say (made before the memo)."""
    from xmdata.runtime.memo import UnitMemo
    from xmdata.tasks.build.image_decode import ImageRef, image_sha256
    from xmdata.tasks.scoring.pairs import with_prefix
    from xmdata.tasks.scoring.score_memo import IMAGE_KIND, TEXT_KIND

    if use is None or pair.get("text") is None:
        return None
    if use.get("memo") is None:
        return "image and text embeddings computed by this build (the memo was off)"
    keyed, served = use.get("keyed_by", {}), use.get("served", {})
    digest = image_sha256(ImageRef(path=pair.get("image_path"), data=pair.get("image_bytes")), keyed.get("image_root"))
    text = UnitMemo.key([with_prefix(keyed.get("prefix", ""), pair["text"])])
    said = [f"{what} {'from the memo (computed by an earlier build, the same bytes)' if hit else 'computed by this build'}"
            for what, hit in (("image embedding", digest is not None and UnitMemo.key([digest]) in set(served.get(IMAGE_KIND, ()))),
                              ("text embedding", text in set(served.get(TEXT_KIND, ()))))]
    return ", ".join(said)
