"""A tokeniser for every script, without Java or models: Unicode letters/digits/marks runs are words,
except in scripts written without spaces between words (Han, Hiragana, Katakana, Thai, Lao, Khmer,
Myanmar), where each character with its combining marks is one token — CIDEr's n-grams then become
character n-grams there, the usual choice for Chinese and Japanese captioning metrics. Punctuation and
symbols are dropped; text is NFC-normalised and case-folded."""
from __future__ import annotations

import unicodedata

import regex

UNSPACED_SCRIPTS = ("Han", "Hiragana", "Katakana", "Thai", "Lao", "Khmer", "Myanmar")
# Script_Extensions, so that marks shared by Hiragana and Katakana (ー, ゙) count as unspaced too.
_UNSPACED = "".join(rf"\p{{scx={s}}}" for s in UNSPACED_SCRIPTS)
_TOKEN = regex.compile(rf"[[{_UNSPACED}]--[\p{{P}}\p{{S}}]]\p{{M}}*|[[\p{{L}}\p{{N}}\p{{M}}]--[{_UNSPACED}]]+",
                       regex.V1)
_UNSPACED_LETTER = regex.compile(rf"[[{_UNSPACED}]&&\p{{L}}]", regex.V1)
_LETTER = regex.compile(r"\p{L}")


def normalise(text: str) -> str:
    """NFC, case-folded, whitespace collapsed: what tokens and character counts are taken from."""
    return " ".join(unicodedata.normalize("NFC", text).casefold().split())


def tokenize(text: str) -> list[str]:
    return _TOKEN.findall(normalise(text))


def whitespace_words(text: str) -> int:
    """Words as Crossmodal-3600's Table 1 counts them: runs between whitespace (so ~1 for zh, ja, th)."""
    return len(text.split())


def is_unspaced(text: str) -> bool:
    """Most letters belong to a script written without spaces between words."""
    letters = len(_LETTER.findall(text))
    return letters > 0 and 2 * len(_UNSPACED_LETTER.findall(text)) > letters
