"""The registry's translator entries: M2M100, NLLB-200, MADLAD and any chat LLM (llm.py), each on the engine its spec names
(`engine` option: transformers' generate() by default, or CTranslate2, ct2_translator.py)."""
from __future__ import annotations

from .base import ModelSpec
from .m2m100 import M2M100Translator
from .madlad import MadladTranslator
from .nllb import NllbTranslator


def _on_ctranslate2(spec: ModelSpec) -> bool:
    return spec.option("engine") == "ctranslate2"


def m2m100_translator(spec: ModelSpec) -> M2M100Translator:
    if _on_ctranslate2(spec):
        from .ct2_translator import M2M100CT2Translator

        return M2M100CT2Translator(spec)
    return M2M100Translator(spec)


def madlad_translator(spec: ModelSpec) -> MadladTranslator:
    if _on_ctranslate2(spec):
        from .ct2_translator import MadladCT2Translator

        return MadladCT2Translator(spec)
    return MadladTranslator(spec)


def nllb_translator(spec: ModelSpec) -> NllbTranslator:
    if _on_ctranslate2(spec):
        from .ct2_translator import NllbCT2Translator

        return NllbCT2Translator(spec)
    return NllbTranslator(spec)


def llm_translator(spec: ModelSpec):
    """A causal LM with a chat template (llm.py); on CTranslate2, its Generator (beam search only)."""
    if _on_ctranslate2(spec):
        from .ct2_generator import LlmCT2Generator

        return LlmCT2Generator(spec)
    from .llm import LlmTranslator

    return LlmTranslator(spec)
