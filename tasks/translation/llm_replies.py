"""What an `llm` translator's reply becomes, by rules declared once: cleaned of what chat models wrap a
translation in, then kept as a candidate or refused with a registered reason (schemas/reasons.py).

Cleaning, in order, repeated until nothing changes: surrounding whitespace; a leading preamble
("Here is the translation:", "Sure! Here's the French translation:", "Translation:"); quotes that
wrap the whole reply. Then the first rule that holds refuses the reply:

- `truncated`: generation stopped at max_new_tokens, not at the end of the turn;
- `empty_output`: nothing is left;
- `refusal`: the reply opens as a refusal ("I'm sorry", "I cannot", "As an AI");
- `answer_not_translation`: the reply opens as an answer or a comment on the text instead of its
  translation ("The answer is", "This text says");
- `copy_of_source`: the reply is the source again (case and spacing aside).

The patterns are English openings, as far as declared patterns can tell: a refusal in another
language passes here and is left to language ID (the target-language check) and COMETKiwi. The raw
reply is what the memo keeps (the rules run on every build; RULES_VERSION is in the shard's params).
"""
from __future__ import annotations

import re
from dataclasses import dataclass

RULES_VERSION = 1
REASONS = ("truncated", "empty_output", "refusal", "answer_not_translation", "copy_of_source")
_LANGUAGE = r"(?:[A-Z][\w-]*(?:\s+[A-Z(][\w()-]*)?\s+)?"  # "French ", "Simplified Chinese "
PREAMBLES = tuple(re.compile(p, re.I) for p in (
    rf"^(?:sure|certainly|of course|okay|ok)\s*[,!.]?\s*",
    rf"^here(?:'s|’s| is| are)\s+(?:the|your|a|my)?\s*{_LANGUAGE}translations?\b[^:\n]{{0,40}}[:：]\s*",
    rf"^(?:the\s+)?{_LANGUAGE}translation(?:\s+is)?\s*[:：]\s*",
    r"^translated\s+text\s*[:：]\s*",
))
WRAPPING_QUOTES = (('"', '"'), ("'", "'"), ("“", "”"), ("„", "“"), ("«", "»"), ("‘", "’"), ("「", "」"),
                   ("『", "』"), ("`", "`"))
REFUSALS = re.compile(r"^(?:i'?m sorry|i am sorry|sorry\b|i (?:cannot|can't|can’t|can not|won't|am unable|'m unable)|"
                      r"as an ai\b|i do not (?:translate|feel)|unfortunately,? i)", re.I)
ANSWERS = re.compile(r"^(?:the answer (?:is|would be)|answer\s*[:：]|(?:this|the) (?:text|sentence|phrase) "
                     r"(?:is|says|means|appears|seems|describes)|it (?:means|says)\b)", re.I)
SPACES = re.compile(r"\s+")


@dataclass(frozen=True)
class Judged:
    text: str  # the cleaned reply
    reason: str | None  # None: a candidate


def clean_reply(text: str) -> str:
    while True:
        before = text = text.strip()
        for pattern in PREAMBLES:
            text = pattern.sub("", text, count=1).strip()
        for opening, closing in WRAPPING_QUOTES:
            if len(text) >= 2 and text.startswith(opening) and text.endswith(closing):
                text = text[len(opening):-len(closing)].strip()
        if text == before:
            return text


def _plain(text: str) -> str:
    return SPACES.sub(" ", text).strip().casefold()


def judge(raw: str, truncated: bool, source_text: str) -> Judged:
    text = clean_reply(raw)
    if truncated:
        return Judged(text, "truncated")
    if not text:
        return Judged(text, "empty_output")
    if REFUSALS.match(text):
        return Judged(text, "refusal")
    if ANSWERS.match(text):
        return Judged(text, "answer_not_translation")
    if _plain(text) == _plain(source_text):
        return Judged(text, "copy_of_source")
    return Judged(text, None)


def screen(replies: list, source_text: str) -> tuple[list, list[tuple[object, str]]]:
    """(the kept candidates, cleaned, one a distinct text, best rank first; the refused replies with
    their reasons). `replies`: models.llm.Reply, raw, best first."""
    from xmdata.models.base import Candidate

    kept: dict[str, Candidate] = {}
    refused = []
    for reply in replies:
        verdict = judge(reply.text, reply.truncated, source_text)
        if verdict.reason:
            refused.append((reply, verdict.reason))
        else:
            kept.setdefault(verdict.text, Candidate(verdict.text, reply.rank, reply.sequence_score))
    return list(kept.values()), refused
