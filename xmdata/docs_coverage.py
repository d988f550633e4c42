"""The reference page of which translator covers which of Crossmodal-3600's languages (docs/reference/
translator-coverage.md), generated from data/language_areas.json by xmdata/docs_reference.py."""
from __future__ import annotations

import os


TRANSLATORS = ("m2m100", "nllb", "madlad")  # the translator backends, as data/language_areas.json names their codes


def covering_pools(codes: dict[str, dict]) -> list[tuple[str, ...]]:
    """The smallest pools (by engines, then in TRANSLATORS' order) that cover every language of CODES."""
    from itertools import combinations

    for size in range(1, len(TRANSLATORS) + 1):
        found = [pool for pool in combinations(TRANSLATORS, size)
                 if all(any(c.get(engine) for engine in pool) for c in codes.values())]
        if found:
            return found
    return []


def translator_coverage_page() -> str:
    import json
    from itertools import combinations

    from xmdata.data import DATA_DIR
    from xmdata.cli_docs import HEADER
    from xmdata.tasks.selection.language_areas import load_language_areas

    areas = load_language_areas().languages
    notes = json.load(open(os.path.join(DATA_DIR, "language_areas.json"), encoding="utf-8")).get("code_notes", {})
    codes = {code: area.codes for code, area in areas.items()}
    names = {"m2m100": "M2M100", "nllb": "NLLB-200", "madlad": "MADLAD-400"}
    lines = ["# Translator coverage", "", HEADER.strip(), "",
             f"Crossmodal-3600's {len(codes)} languages and each translator's code for them, from the `codes` of "
             "`data/language_areas.json` (written by `data/make_language_areas.py`). A dash: the translator has "
             "no such language, and a target it names is refused (one engine), or left to the other engines of "
             "a pool ([translate](../how-to/translate.md#a-pool-of-translators)). The M2M100 and NLLB-200 "
             "columns are checked against the tokenizers' own lists (transformers' "
             "`tokenization_m2m_100.FAIRSEQ_LANGUAGE_CODES['m2m100']` and `tokenization_nllb."
             "FAIRSEQ_LANGUAGE_CODES`; tests/models/test_nllb.py); MADLAD-400's against the table alone: its "
             "`<2xx>` tokens are in its checkpoint's vocabulary, which cannot be fetched here.", "",
             "| language | " + " | ".join(names[t] for t in TRANSLATORS) + " |",
             "|---|" + "---|" * len(TRANSLATORS)]
    for code, systems in codes.items():
        cells = [f"`{systems[t]}`" + (" *" if code in notes.get(t, {}) else "") if systems.get(t) else "–"
                 for t in TRANSLATORS]
        lines.append(f"| {code} | " + " | ".join(cells) + " |")
    counts = {t: sum(bool(c.get(t)) for c in codes.values()) for t in TRANSLATORS}
    lines += ["| **covered** | " + " | ".join(f"**{counts[t]}**" for t in TRANSLATORS) + " |", ""]
    pools = covering_pools(codes)
    said = " and ".join(" + ".join(names[e] for e in pool) for pool in pools)
    pairs = [p for p in combinations(TRANSLATORS, 2)
             if all(any(c.get(e) for e in p) for c in codes.values())]
    lines += [f"**All {len(codes)} languages**: {said} alone" + (
        "; as pools, " + ", ".join(" + ".join(names[e] for e in p) for p in pairs) if pairs else "") + ". "
              "M2M100 alone misses " + ", ".join(c for c, s in codes.items() if not s.get("m2m100")) + ".", "",
              "**Cost**: a pool costs the sum of its engines' beam searches, each engine on its own; the "
              "scoring is shared — fastText language ID and COMETKiwi score every candidate, whichever engine "
              "wrote it, as one engine's are scored (COMETKiwi's pairs grow with the candidates).", ""]
    for system, chosen in notes.items():
        lines += [f"\\* {names.get(system, system)}: where our code names a macrolanguage, the member it has:", ""]
        lines += [f"- `{code}` → `{codes[code][system]}`: {note}" for code, note in chosen.items()] + [""]
    return "\n".join(lines)
