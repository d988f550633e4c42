"""Extraction: split a translated packed text on its label words, then validate every part.

The split regex takes the target's label words and the English ones (models sometimes keep English),
any case, any spacing, an ASCII or full-width colon. Nothing is guessed: an output whose parts cannot
be recovered exactly is refused with one reason (REASONS, in the order they are checked).
"""
from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache

from xmdata.tasks.qa.pack import Packed, unpack_part

REASONS = ("empty_output", "label_missing", "colon_missing", "part_count_mismatch", "parts_reordered",
           "text_before_label", "empty_part", "label_leak", "placeholder_in_output")
COLON = r"\s*[:：﹕︓꞉]"
BIDI_MARKS = re.compile("[\u200e\u200f\u202a-\u202e\u2066-\u2069\ufeff]")
PLACEHOLDER_TRACE = re.compile(r"<\s*\|[^>]*\|\s*>|<\s*\|?\s*image[\s_]*\d+|image_\d+\s*\|?\s*>", re.I)
WORDLESS = re.compile(r"[\W_]+")


def _unspaced(char: str) -> bool:
    """Scripts written without spaces between words: no word boundary can be asked for before a label."""
    name = unicodedata.name(char, "")
    return name.startswith(("CJK", "HIRAGANA", "KATAKANA", "THAI"))


def _alternatives(words: list[str]) -> str:
    """Longest first; one word-boundary lookbehind for the spaced scripts' words, none for CJK/Thai."""
    words = sorted({unicodedata.normalize("NFC", w) for w in words if w}, key=lambda w: (-len(w), w))
    spaced = "|".join(r"\s+".join(map(re.escape, w.split())) for w in words if not _unspaced(w[0]))
    unspaced = "|".join(map(re.escape, (w for w in words if _unspaced(w[0]))))
    return "|".join(filter(None, [spaced and rf"(?<!\w)(?:{spaced})", unspaced]))


@dataclass(frozen=True)
class LabelPattern:
    """Compiled once per target: labels followed by a colon (split), and bare label words (checks)."""

    split: re.Pattern
    bare: re.Pattern

    @classmethod
    def build(cls, labels: dict[str, list[str]]) -> "LabelPattern":
        question, answer = _alternatives(labels["question"]), _alternatives(labels["answer"])
        words = rf"(?:(?P<q>{question})|(?P<a>{answer}))"
        return cls(re.compile(words + COLON, re.I), re.compile(words + r"(?!\w)", re.I))


def normalise(text: str) -> str:
    return BIDI_MARKS.sub("", unicodedata.normalize("NFC", text or ""))


@lru_cache(maxsize=4096)  # one instance is extracted once per candidate and target
def expected_labels(packed: Packed, english: LabelPattern) -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Label kinds the packed source holds (ours and any inside a part: MMEB's VQA queries say
    "the following question: …"), and the indices of ours among them."""
    matches = list(english.split.finditer(packed.text))
    kinds = ["q" if m.group("q") else "a" for m in matches]
    return tuple(kinds), tuple(i for i, m in enumerate(matches) if m.start() in packed.label_offsets)


def split_output(output: str, packed: Packed, pattern: LabelPattern, english: LabelPattern
                 ) -> tuple[list[str] | None, str | None]:
    """(the texts between our labels, None) or (None, reason). A label inside a part's source may
    vanish in translation ("la question suivante :") or survive; both are accepted, nothing else."""
    text = normalise(output)
    if not text.strip():
        return None, "empty_output"
    source_kinds, ours = expected_labels(packed, english)
    n = len(packed.parts)
    matches = list(pattern.split.finditer(text))
    kinds = ["q" if m.group("q") else "a" for m in matches]
    if kinds == ["q"] + ["a"] * (n - 1):
        chosen = matches
    elif tuple(kinds) == source_kinds:
        chosen = [matches[i] for i in ours]
    elif len(matches) < n:
        return None, "colon_missing" if len(pattern.bare.findall(text)) >= n else "label_missing"
    elif sorted(kinds) in (sorted(source_kinds), ["a"] * (n - 1) + ["q"]):  # same labels, other order
        return None, "parts_reordered"
    else:
        return None, "part_count_mismatch"
    if WORDLESS.sub("", text[:chosen[0].start()]):
        return None, "text_before_label"
    ends = [m.start() for m in chosen[1:]] + [len(text)]
    return [text[m.end():end].strip() for m, end in zip(chosen, ends)], None


def _opens_with_label(text: str, pattern: LabelPattern) -> bool:
    """A label word opening a part: a label the split did not take (doubled, or its colon lost)."""
    words = WORDLESS.sub(" ", text).split()
    return bool(words) and bool(pattern.bare.fullmatch(words[0]))


def validate_parts(parts: list[str], sources: list[str], packed: Packed, pattern: LabelPattern,
                   english: LabelPattern) -> tuple[list[str] | None, str | None]:
    """(restored parts, None) or (None, reason): none empty, no label word opening a part unless its
    source opens with one too, no placeholder trace; then the period removed and the placeholder restored."""
    for part in parts:
        if not WORDLESS.sub("", part):
            return None, "empty_part"
    for part, source in zip(parts, sources):
        if _opens_with_label(part, pattern) and not _opens_with_label(source, english):
            return None, "label_leak"
        if PLACEHOLDER_TRACE.search(part):
            return None, "placeholder_in_output"
    return [unpack_part(p, m) for p, m in zip(parts, packed.parts)], None


def extract(output: str, packed: Packed, sources: list[str], pattern: LabelPattern,
            english: LabelPattern) -> tuple[list[str] | None, str | None]:
    """Every part of one instance, restored, or the reason it cannot be recovered."""
    parts, reason = split_output(output, packed, pattern, english)
    if reason:
        return None, reason
    return validate_parts(parts, sources, packed, pattern, english)
