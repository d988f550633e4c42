"""NLLB-200 as a Translator: an M2M100 model (M2M100ForConditionalGeneration) with NllbTokenizer,
whose languages are FLORES-200 codes (`fra_Latn`): the source code is the prefix token the tokenizer
adds, the target code is forced as the first generated token, as M2M100's `__xx__` is.

The language tokens are the tokenizer's additional special tokens that are FLORES-200 codes
(transformers' tokenization_nllb.FAIRSEQ_LANGUAGE_CODES by default; a checkpoint lists its own).
"""
from __future__ import annotations

import re
from typing import Any, Sequence

from ._seq2seq import Seq2SeqTranslator

FLORES_CODE = re.compile(r"[a-z]{3}_[A-Z][a-z]{3}")  # ISO 639-3 and ISO 15924: arb_Arab, zho_Hans


class NllbTranslator(Seq2SeqTranslator):
    model_class_name = "M2M100ForConditionalGeneration"
    # The slow tokenizer, as for M2M100: the same class builds the tiny model and reads the real ones.
    tokenizer_class_name = "NllbTokenizer"

    def language_token_ids(self) -> dict[str, int]:
        codes = [t for t in self.tokenizer.additional_special_tokens if FLORES_CODE.fullmatch(t)]
        return {code: self.tokenizer.convert_tokens_to_ids(code) for code in codes}

    def model_inputs(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[str]:
        self.check_language(source_lang, "source")
        self.check_language(target_lang, "target")
        return list(texts)

    def set_source_language(self, source_lang: str) -> None:
        self.tokenizer.src_lang = source_lang  # the tokenizer prefixes the code's token from this

    def generate_kwargs(self, target_lang: str) -> dict[str, Any]:
        return {"forced_bos_token_id": self.languages[target_lang]}
