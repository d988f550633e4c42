"""One language-code system for every table xmdata writes: the ISO 639-1 code where the language has
one, else its ISO 639-3 code (`en`, `ja`, `he`, `fil`, `quz`), lower case, with no region or script.
`language_code()` is the one normaliser: importers call it on every code a published file gives,
and what it cannot read is refused with the place it came from.

The reading is langcodes' (CLDR's aliases and IANA's registry): case (`EN`), `_` for `-` (`zh_CN`),
deprecated codes (`iw` -> `he`, `in` -> `id`), 639-2/3 codes that have a 639-1 code (`eng`, `ger`),
and CLDR's `tl` -> `fil`. Macrolanguages are not folded (`quz` stays `quz`, as XM3600 and its paper
name it). The few codes publishers use that are no language code at all are listed in ALIASES with
where they occur; anything else that is not a language is refused, never passed through."""
from __future__ import annotations

from functools import lru_cache

from .contract import ContractError

# Codes published files use that are not language codes, with the file that uses them.
ALIASES = {
    "jp": "ja",  # STAIR Captions' test_1kcaptions_jp.txt in the XTD10 repository (jp is Japan's country code)
    # Wikimedia's codes, as Babel-ImageNet's 298-language file keys them (BAT_SMG, …): read otherwise they
    # would name a language family (bat, roa, fiu) instead of the language
    "bat-smg": "sgs", "roa-rup": "rup", "fiu-vro": "vro", "zh-classical": "lzh", "zh-min-nan": "nan",
}
LANGUAGE_COLUMNS = ("language", "source_language")  # the columns of any table that hold a language code
# Labels a language-ID model gives that the normaliser would misread or refuse: fastText lid.176 names
# Wikipedia editions (https://fasttext.cc/docs/en/language-identification.html lists its 176 labels).
# A label that names no single language maps to None: counted as such, never guessed.
MODEL_LABELS = {
    "als": "gsw",  # Alemannic (Wikipedia's als); ISO's als is Tosk Albanian
    "bh": "bho",  # Wikipedia's Bihari edition is written in Bhojpuri; ISO's bh is the collective Bihari languages
    "sh": None,  # Serbo-Croatian: Serbian, Croatian, Bosnian, Montenegrin
    "nah": None,  # Nahuatl: a collective code (ISO 639-5)
    "eml": None,  # Emilian-Romagnol: retired by ISO, split into Emilian (egl) and Romagnol (rgn)
}
NOT_A_LANGUAGE = {"und", "mul", "zxx", "mis"}  # "undetermined", "multiple", "no content", "uncoded"


class LanguageCodeError(ContractError):
    """A code that names no language; `where` says which file, line or key it came from."""


@lru_cache(maxsize=4096)
def _normalised(raw: str) -> str | None:
    import langcodes  # pure Python, ~25 ms: only when a code is first read

    text = raw.strip().replace("_", "-")
    text = ALIASES.get(text.lower(), text)
    if not text or text.lower().startswith(("x-", "i-")) or not langcodes.tag_is_valid(text):
        return None  # x-: a private tag; i-: a grandfathered IANA tag, no ISO code
    language = langcodes.Language.get(langcodes.standardize_tag(text)).language
    if language is None or language in NOT_A_LANGUAGE or "qaa" <= language <= "qtz":  # qaa-qtz: private use
        return None
    if language in collections():  # ISO 639-5 (gmq, map, art, sgn, bh, nah): a family, not one language
        return None
    return language


@lru_cache(maxsize=1)
def collections() -> frozenset[str]:
    """The codes IANA's language subtag registry (the copy langcodes ships) marks `Scope: collection`."""
    from pathlib import Path

    import langcodes

    registry = Path(langcodes.__file__).parent / "data" / "language-subtag-registry.txt"
    found = set()
    for record in registry.read_text(encoding="utf-8").split("%%"):
        fields = dict(line.split(": ", 1) for line in record.strip().splitlines() if ": " in line)
        if fields.get("Type") == "language" and fields.get("Scope") == "collection":
            found.add(fields["Subtag"])
    return frozenset(found)


def language_code(raw, where: str) -> str:
    """RAW as the project's code (`EN` -> `en`, `jp` -> `ja`, `zh_CN` -> `zh`); a LanguageCodeError
    naming WHERE (file and line, or key) when RAW is not a language code."""
    code = _normalised(raw) if isinstance(raw, str) else None
    if code is None:
        raise LanguageCodeError(f"{where}: {raw!r} is not a language code (expected ISO 639-1 such as 'en', "
                                "or ISO 639-3 such as 'fil'; not a collective ISO 639-5 code or a private tag)")
    return code


def label_code(label: str | None) -> str | None:
    """A language-ID model's label as the project's code (lid.176's `tl` -> `fil`, `als` -> `gsw`); None
    for a label that names no single language (`sh`, `nah`, `eml`) or none at all (`und`)."""
    if label is None:
        return None
    if label in MODEL_LABELS:
        return MODEL_LABELS[label]
    return _normalised(label)


def is_normalised(code) -> bool:
    """Whether CODE is already in the project's system (what language_code() returns for itself)."""
    return isinstance(code, str) and _normalised(code) == code
