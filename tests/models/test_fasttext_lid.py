"""What fastText reads of a text (models/fasttext_lid.py `normalise_for_lid`): whitespace folded to
single spaces, control characters read as spaces. Its shortcut for a printable text with no run of
spaces and none at either end (returned as it is) rests on one fact of Unicode as Python knows it,
checked here over every code point, and gives what folding gives."""
from __future__ import annotations

import random
import sys

from xmdata.models.fasttext_lid import normalise_for_lid


def folded(text: str) -> str:
    """The fold without the shortcut: what normalise_for_lid returned before it had one."""
    if not text.isprintable():
        text = "".join(ch if ch.isprintable() or ch.isspace() else " " for ch in text)
    return " ".join(text.split())


def test_the_only_printable_whitespace_is_the_space():
    printable_spaces = [c for c in map(chr, range(sys.maxunicode + 1)) if c.isspace() and c.isprintable()]
    assert printable_spaces == [" "]


def test_the_shortcut_gives_what_folding_gives():
    pieces = [" ", "  ", "\t", "\n", "\u00a0", "\u2003", "\u3000", "\x1f", "\x00", "\u200b", "\u2028", "é", "猫",
              "дом", "<|image_1|>", "a", "Ein Hund.", "🙂", "\u0301", ""]
    rng = random.Random(0)
    texts = ["".join(rng.choice(pieces) for _ in range(rng.randrange(0, 8))) for _ in range(20000)]
    texts += ["A red bicycle", " leading", "trailing ", "two  spaces", "one space", "", " ", "tab\there"]
    assert [normalise_for_lid(t) for t in texts] == [folded(t) for t in texts]
    assert normalise_for_lid("one space") == "one space" and normalise_for_lid(" a  b ") == "a b"
