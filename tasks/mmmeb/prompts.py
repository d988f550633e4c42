"""MMMEB's instruction formatting (xVLM2Vec, Section 6 and the Appendix) as a `prompt` column of the
published queries and candidates, for instruction-tuned systems (VLM2Vec): the plain formatting, the
dataset's text without its final punctuation. Null where the paper has no template (X) for a task in
a language; CLIP-like systems read `text` instead."""
from __future__ import annotations

END_PUNCTUATION = ".!?。！？"


def plain(text: str | None) -> str | None:
    return None if text is None else text.rstrip().rstrip(END_PUNCTUATION).rstrip()


def _fill(template: dict | None, side: str, text: str | None) -> str | None:
    if template is None:
        return None
    return template[side].replace("{query_text}", plain(text) or "").replace("{target_text}", plain(text) or "")


def with_prompts(queries: list[dict], candidates: list[dict], templates: dict) -> tuple[list[dict], list[dict]]:
    def template(row):
        return templates.get(row["language"], {}).get(row["task"])

    return ([{**q, "prompt": _fill(template(q), "query", q["text"])} for q in queries],
            [{**c, "prompt": _fill(template(c), "target", c["text"])} for c in candidates])
