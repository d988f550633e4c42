"""M2M100 (and any checkpoint with its tokenizer) as a Translator: the target language is forced as
the first generated token, the source language is a prefix token the tokenizer adds."""
from __future__ import annotations

from typing import Any, Sequence

from ._seq2seq import Seq2SeqTranslator


class M2M100Translator(Seq2SeqTranslator):
    model_class_name = "M2M100ForConditionalGeneration"
    tokenizer_class_name = "M2M100Tokenizer"  # there is no fast M2M100 tokenizer

    def language_token_ids(self) -> dict[str, int]:
        return dict(self.tokenizer.lang_code_to_id)

    def model_inputs(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[str]:
        self.check_language(source_lang, "source")
        self.check_language(target_lang, "target")
        return list(texts)

    def set_source_language(self, source_lang: str) -> None:
        self.tokenizer.src_lang = source_lang  # the tokenizer prefixes __xx__ from this

    def generate_kwargs(self, target_lang: str) -> dict[str, Any]:
        return {"forced_bos_token_id": self.languages[target_lang]}
