"""The params of the two translation builds, declared once: `xmdata translate` / `translate-qa`
flags, the flows' forms and the release config's `translation:` / `qa_translation:` sections."""
from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, Field, TypeAdapter, WrapValidator, field_validator, model_validator

from xmdata.tasks.stage_params import DEFAULT_EXCLUDED_TASKS, DEFAULT_PER_TASK, Params

from .mbr_options import check_mbr_fits
from .options import FilterOptions, TranslatorOptions


def _distinct(items: list[str]) -> list[str]:
    if repeated := sorted({item for item in items if items.count(item) > 1}):
        raise ValueError(f"{', '.join(repeated)} given more than once")
    return items


def qe_follows_the_translator(data, filters_on: bool):
    """COMETKiwi runs where the translator was put unless it is placed itself: `translator.device`
    given and `filters.qe_device` not moves both (the command line's --device, a config's and the UI
    form's alike). `filters_on`: a build whose filters run whether given or not (translate); with
    translate-qa they run only when `filters` is set."""
    if not isinstance(data, dict):
        return data
    translator = data.get("translator")
    if isinstance(translator, list) and translator:  # a pool: where its first engine runs
        translator = translator[0]
    given = (translator.get("device") if isinstance(translator, dict) else
             translator.device if isinstance(translator, TranslatorOptions) and "device" in translator.model_fields_set
             else None)
    filters = data.get("filters")
    if given is None or (filters is None and not filters_on):
        return data
    if filters is None or isinstance(filters, dict):
        return {**data, "filters": {"qe_device": given, **(filters or {})}}
    if isinstance(filters, FilterOptions) and "qe_device" not in filters.model_fields_set:
        return {**data, "filters": filters.model_copy(update={"qe_device": given})}
    return data


Names = Annotated[list[str], Field(min_length=1), AfterValidator(_distinct)]  # targets, columns


def _distinct_engines(engines: list[TranslatorOptions]) -> list[TranslatorOptions]:
    if not engines:
        raise ValueError("translator: an empty list names no engine (give one translator, or a list of them)")
    labels = [engine.engine_label() for engine in engines]
    if repeated := sorted({label for label in labels if labels.count(label) > 1}):
        raise ValueError(f"translator: {', '.join(repeated)} listed more than once; a pool names each engine "
                         "(backend and model) once")
    return engines


# A pool of engines: every engine's candidates are scored the same way and the best is chosen across
# them (tasks/translation/pool.py). Its targets and source are the project's codes.
Pool = Annotated[list[TranslatorOptions], AfterValidator(_distinct_engines)]
_POOL = TypeAdapter(Pool)


def _one_or_pool(value, handler):
    """One translator, or a pool: told apart by the value's shape, so that an error names the field as
    it is written (translator.num_beams, translator.1.backend), not a branch of the union."""
    if isinstance(value, (list, tuple)):
        return _POOL.validate_python(list(value))
    return value if isinstance(value, TranslatorOptions) else TranslatorOptions.model_validate(value)


Translators = Annotated[TranslatorOptions | Pool, WrapValidator(_one_or_pool)]


def check_codes(params) -> None:
    """A pool's languages are the project's codes; a one-engine run's are its backend's (as today, so
    its params hash is unchanged), and a project code that its backend spells otherwise is refused
    there, naming the backend's code, rather than mixed in."""
    from xmdata.tasks.translation.pool import check_language_codes  # the code table: at validation only

    check_language_codes(params.translator, params.source, params.targets)
QA_TRANSLATOR = TranslatorOptions(backend="madlad", num_beams=1, num_candidates=1)  # the method: plain generation


class Engines:
    """What the two builds' params say of their translator: one engine, or a pool of them."""

    @property
    def engines(self) -> list[TranslatorOptions]:
        return list(self.translator) if isinstance(self.translator, list) else [self.translator]

    @property
    def is_pool(self) -> bool:
        return isinstance(self.translator, list)


class TranslateParams(Engines, Params):
    columns: Names = Field(["text"], description="text columns, plain or list of strings (e.g. caption,refs)")
    source: str = Field("en", description="source language")
    targets: Names = Field(description="target languages in the backend's codes (fr, de, zh …); with a list "
                           "of translators (a pool), the project's codes")
    translator: Translators = Field(TranslatorOptions(), description="M2M100, NLLB-200 or "
                                                 "MADLAD-400, beams and candidates; or a list of them (a pool)")
    filters: FilterOptions = Field(FilterOptions(), description="language ID and COMETKiwi models and thresholds")

    @model_validator(mode="before")
    @classmethod
    def _qe_where_the_translator_is(cls, data):
        return qe_follows_the_translator(data, filters_on=True)

    @model_validator(mode="after")
    def _codes(self):
        check_codes(self)
        check_mbr_fits(self.filters, self.engines)
        return self


class TranslateQaParams(Engines, Params):
    targets: Names = Field(description="target languages in the backend's codes; with a list of translators "
                           "(a pool), the project's codes")
    source: str = Field("en", description="source language")
    translator: Translators = Field(QA_TRANSLATOR, description="MADLAD-400 (default), M2M100 or NLLB-200, beams "
                                    "and candidates; or a list of them (a pool)")
    filters: FilterOptions | None = Field(None, description="set to label every extracted candidate with LID and "
                                          "COMETKiwi and keep the best passing one")
    exclude_tasks: list[str] = Field(list(DEFAULT_EXCLUDED_TASKS), description="tasks left out (the method's "
                                     "six; empty keeps every task)")
    per_task: int | None = Field(DEFAULT_PER_TASK, ge=1, description="the first N instances of each task")

    @model_validator(mode="before")
    @classmethod
    def _qe_where_the_translator_is(cls, data):
        return qe_follows_the_translator(data, filters_on=False)

    @field_validator("translator", mode="before")
    @classmethod
    def _over_the_methods_translator(cls, value):
        """What a config, the form or the flags set of the translator goes over the method's
        (MADLAD, plain generation), not over TranslatorOptions' beam-search defaults."""
        method = QA_TRANSLATOR.model_dump(exclude_unset=True)
        if isinstance(value, (list, tuple)):  # a pool: each engine over the method's
            return [{**method, **engine} if isinstance(engine, dict) else engine for engine in value]
        return {**method, **value} if isinstance(value, dict) else value

    @model_validator(mode="after")
    def _no_sentence_splitting(self):
        for i, engine in enumerate(self.engines):
            if engine.split_sentences:
                where = f"translator.{i}" if self.is_pool else "translator"
                raise ValueError(f"{where}.split_sentences: a packed instance is translated whole (or refused as "
                                 "too_long), never split")
        if self.filters is not None and self.filters.uses_mbr:  # Q/A selection is QE's (tasks/qa/outputs.py)
            raise ValueError(f"select {self.filters.select}: translate-qa chooses by QE only")
        return self

    @model_validator(mode="after")
    def _codes(self):
        check_codes(self)
        return self
