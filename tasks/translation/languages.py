"""Which fastText labels count as "in the target language", from the code table in data/.

Translators and lid.176 name some languages differently (Hebrew `he`/`iw`, Norwegian `no`/`nb`,
Filipino `tl`/`fil`): data/language_areas.json holds each language's code in every system, and a
target code of the translator backend maps to the lid.176 label of the same language. Users add or
override labels with `--lid-accept xx=l1,l2` (a custom LID model, a language outside the table).
"""
from __future__ import annotations

from xmdata.schemas import ContractError

from xmdata.tasks.selection.language_areas import load_language_areas


def parse_lid_accept(text: str | None) -> dict[str, list[str]]:
    """'no=no,nn;mi=mi' -> {'no': ['no', 'nn'], 'mi': ['mi']}."""
    accepted: dict[str, list[str]] = {}
    for item in filter(None, (part.strip() for part in (text or "").split(";"))):
        target, sep, labels = item.partition("=")
        if not sep or not labels.strip():
            raise ContractError(f"--lid-accept: expected TARGET=LABEL[,LABEL] items separated by ';', got {item!r}")
        accepted[target.strip()] = [label.strip() for label in labels.split(",") if label.strip()]
    return accepted


def lid_labels_for(targets: list[str], backend: str, overrides: dict[str, list[str]] | None = None
                   ) -> dict[str, list[str]]:
    """{target: accepted lid.176 labels}. A language the table knows but lid.176 lacks is an error
    (nothing could ever pass), unless the user names labels for it."""
    overrides = overrides or {}
    by_backend_code: dict[str, list[str | None]] = {}
    for area in load_language_areas().languages.values():
        code = area.code if backend == "llm" else area.codes.get(backend)  # an llm takes the project's codes
        if code:
            by_backend_code.setdefault(code, []).append(area.codes.get("lid176"))
    accepted = {}
    for target in targets:
        if target in overrides:
            accepted[target] = sorted(set(overrides[target]))
        elif target in by_backend_code:
            labels = sorted({label for label in by_backend_code[target] if label})
            if not labels:
                raise ContractError(
                    f"target {target!r}: fastText lid.176 has no label for this language, so no candidate "
                    f"could pass language ID; name the labels to accept with --lid-accept {target}=LABEL")
            accepted[target] = labels
        else:  # outside the table: backend codes are ISO 639, as lid.176's labels mostly are
            accepted[target] = [target.replace("_", "-").split("-")[0]]
    return accepted
