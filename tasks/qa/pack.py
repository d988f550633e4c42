"""Packing an instance for one translation call: `Question: <query> Answer: <positive> Answer: <negative>`.

Per part, what the model must not see is taken out and remembered: the leading image placeholder
(`<|image_1|>` and its newline, put back after), newlines (the packed text is one line; a part's
inner newlines become spaces and are counted, since no position survives translation), and a final
period is added to a part without final punctuation (as the method did) and removed again after.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

QUESTION, ANSWER = "Question:", "Answer:"
LEADING_PLACEHOLDER = re.compile(r"^(?:\s*<\|image_\d+\|>[ \t]*\n?)+")
ANY_PLACEHOLDER = re.compile(r"<\|image_\d+\|>")
INNER_NEWLINES = re.compile(r"\s*[\r\n]+\s*")
# Final punctuation of the scripts in the language table: an instance already ending so gets no period.
FINAL_PUNCTUATION = tuple('.!?…。！？؟۔।॥:;"\'»”’)]」』›')
ADDED_PERIODS = (".", "。", "．", "।", "۔")  # what a model writes for the period that was added


class PackError(ValueError):
    """An instance that cannot be packed faithfully; args[0] is the reject reason."""


@dataclass(frozen=True)
class PartMemory:
    """What was taken out of one part before translation, to put back after."""

    placeholder: str  # the leading placeholder, verbatim (e.g. "<|image_1|>\n"), or ""
    added_period: bool
    flattened_newlines: int


@dataclass(frozen=True)
class Packed:
    text: str
    parts: tuple[PartMemory, ...]  # query, positive, then negative when the instance has one
    label_offsets: tuple[int, ...]  # where each inserted label starts in text


def pack_part(text: str | None) -> tuple[str, PartMemory]:
    text = text or ""
    match = LEADING_PLACEHOLDER.match(text)
    placeholder = match.group(0).lstrip() if match else ""
    body = text[match.end():] if match else text
    if ANY_PLACEHOLDER.search(body):
        raise PackError("placeholder_inside_text")
    body = body.strip()
    if not body:
        raise PackError("empty_text")
    body, newlines = INNER_NEWLINES.subn(" ", body)
    added = not body.endswith(FINAL_PUNCTUATION)
    return body + ("." if added else ""), PartMemory(placeholder, added, newlines)


def pack(query: str | None, positive: str | None, negative: str | None = None) -> Packed:
    """The packed text and each part's memory; raises PackError(reason) for an instance it refuses."""
    parts = [query, positive] + ([negative] if negative and negative.strip() else [])
    bodies, memories = zip(*(pack_part(p) for p in parts))
    labels = [QUESTION] + [ANSWER] * (len(parts) - 1)
    pieces = [f"{label} {body}" for label, body in zip(labels, bodies)]
    offsets = [sum(len(p) + 1 for p in pieces[:i]) for i in range(len(pieces))]
    return Packed(" ".join(pieces), tuple(memories), tuple(offsets))


def unpack_part(translated: str, memory: PartMemory) -> str:
    """The translated part with the added period removed and the placeholder put back."""
    text = translated.strip()
    if memory.added_period and text.endswith(ADDED_PERIODS):
        text = text[:-1].rstrip()
    return memory.placeholder + text
