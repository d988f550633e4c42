"""A pool of translators: every engine's candidates, scored alike, chosen across.

A pool (`translator:` a list) takes the project's language codes (schemas/languages.py); each engine
maps them through its entry in data/language_areas.json's `codes` and runs as a one-engine build
would, in its backend's codes, under `engines/<backend>-<hash>/` of the output: its own translate,
language-ID and COMETKiwi stages, shards and memo units. Adding an engine computes its candidates
and their scores only; removing one computes nothing. `write_candidates` (outputs.py) puts every
engine's scored shards into the one candidates table with an `engine` column, and the targets back
in the project's codes; selection then picks across engines (select.py: ties go to the engine listed
first, then to the better beam rank).

A target that an engine cannot produce (no code in its table entry, or not in its tokenizer's list)
is left to the others and counted in the report; it is refused, in one line and before any model
loads, only when no engine of the pool covers it.

A one-engine build written as before keeps its backend's codes, its stage folders and its params
hash; it is the pool of one engine whose codes are its backend's.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Callable

from xmdata.schemas import ContractError
from xmdata.tasks.translation.mbr_options import MBR_FIELDS

# The backends whose tokenizer prefixes the source language's token, or whose prompt names it (llm;
# MADLAD reads it from the text).
SOURCE_TAGGED = ("m2m100", "nllb", "llm")
# Backends whose codes are ISO 639 codes, as the project's mostly are: a project code outside the
# table is taken as theirs (as lid_labels_for takes it for lid.176). NLLB's FLORES-200 codes carry a
# script, which the project's codes do not: outside the table it has no code, never a guessed one.
ISO_CODED = ("m2m100", "madlad")
ENGINES_FOLDER = "engines"


def backend_code(backend: str, code: str) -> str | None:
    """The project code CODE in BACKEND's codes; None where the table has none for it."""
    from xmdata.tasks.selection.language_areas import load_language_areas

    if backend == "llm":  # asked in words: the project's code, named in the prompt by CLDR's English name
        return code
    area = load_language_areas().languages.get(code)
    if area is not None:
        return area.codes.get(backend)
    return code if backend in ISO_CODED else None


def check_language_codes(translator, source: str, targets: list[str]) -> None:
    """The rules of params.check_codes (a ValueError: the params models report it in one line)."""
    from xmdata.schemas.languages import LanguageCodeError, language_code

    if isinstance(translator, list):
        for lang in [source, *targets]:
            try:
                code = language_code(lang, "translator pool")
            except LanguageCodeError:
                code = None
            if code != lang:
                hint = f" (the project's code: {code})" if code else ""
                raise ValueError(f"a pool of translators takes the project's language codes: {lang!r} is not "
                                 f"one{hint}")
        return
    from xmdata.tasks.selection.language_areas import load_language_areas

    areas = load_language_areas().languages
    own = {area.codes.get(translator.backend) for area in areas.values()}
    for lang in targets:
        area = areas.get(lang)
        theirs = area.codes.get(translator.backend) if area else None
        if lang not in own and theirs is not None and theirs != lang:
            raise ValueError(f"target {lang!r}: one translator takes its backend's codes ({translator.backend} "
                             f"writes this language {theirs!r}); list the translator as a pool "
                             f"(translator: [...]) to give the project's codes")


@dataclass(frozen=True)
class EngineRun:
    """One engine of a build: its one-engine params (its backend's codes) and where its stages go."""
    label: str  # the `engine` column: backend:model
    rank: int  # its place in the pool: ties go to the lower
    params: object  # TranslateParams with this engine alone, in its backend's codes
    folder: str  # under the build's output: "" (a one-engine build: as before) or engines/<name>
    to_project: dict[str, str] = field(default_factory=dict)  # its target codes -> the project's
    left: tuple[str, ...] = ()  # the pool's targets it cannot produce, left to the others


def engine_folder(label: str) -> str:
    backend = label.partition(":")[0]
    return f"{ENGINES_FOLDER}/{backend}-{hashlib.sha256(label.encode()).hexdigest()[:12]}"


def engine_runs(params, languages: Callable | None = None) -> list[EngineRun]:
    """The build's engines (translate's or translate-qa's params), in the pool's order, each with what it covers; LANGUAGES(spec) lists an
    engine's supported codes (registry.translator_languages; None: the table alone decides). Refuses,
    in one line, a target no engine covers and a source no engine can read."""
    if not params.is_pool:
        engine = params.translator
        return [EngineRun(engine.engine_label(), 0, params, "", {t: t for t in params.targets})]
    runs, missing = [], {}
    base = params.model_dump(exclude={"translator", "targets", "source", "filters"})
    for rank, engine in enumerate(params.engines):
        supported = set(languages(engine.spec())) if languages else None
        usable = lambda code: code is not None and (supported is None or code in supported)  # noqa: E731
        source = backend_code(engine.backend, params.source)
        if engine.backend in SOURCE_TAGGED and not usable(source):
            source_ok = False
        else:
            source_ok, source = True, source or params.source
        mapped = {t: backend_code(engine.backend, t) for t in params.targets}
        covered = {t: code for t, code in mapped.items() if source_ok and usable(code)}
        for t in params.targets:
            if t not in covered:
                why = ("no code for the source" if not source_ok else
                       "no code" if mapped[t] is None else f"{mapped[t]} not in its tokenizer")
                missing.setdefault(t, []).append(f"{engine.engine_label()}: {why}")
        if not covered:
            continue
        filters = params.filters and params.filters.model_dump()  # None: translate-qa unscored
        if filters:  # how the translation is chosen is the pool's (across engines), not an engine's
            filters = {k: v for k, v in filters.items() if k not in MBR_FIELDS}
            filters["lid_accept"] = {covered[t]: labels for t, labels in params.filters.lid_accept.items()
                                     if t in covered}
        one = type(params).model_validate({**base, "translator": engine.model_dump(), "source": source,
                                           "targets": list(covered.values()), "filters": filters})
        runs.append(EngineRun(engine.engine_label(), rank, one, engine_folder(engine.engine_label()),
                              {code: t for t, code in covered.items()},
                              tuple(t for t in params.targets if t not in covered)))
    nobody = [t for t in params.targets if len(missing.get(t, ())) == len(params.engines)]
    if nobody:
        raise ContractError("no translator of the pool covers " + "; ".join(
            f"{t} ({', '.join(missing[t])})" for t in nobody))
    return runs
