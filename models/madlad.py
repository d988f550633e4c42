"""MADLAD-400 (T5) as a Translator: the target language is a `<2xx>` token at the start of the input;
the model reads the source language from the text itself."""
from __future__ import annotations

import re
from typing import Sequence

from ._seq2seq import Seq2SeqTranslator

TARGET_TOKEN = re.compile(r"<2([^>]+)>")


class MadladTranslator(Seq2SeqTranslator):
    model_class_name = "T5ForConditionalGeneration"
    # The slow and fast tokenizers split "<2xx>" differently; the slow one is used everywhere,
    # in building the tiny model too, so inputs match what the model was built with.
    tokenizer_class_name = "T5Tokenizer"

    def language_token_ids(self) -> dict[str, int]:
        vocab = self.tokenizer.get_vocab()
        return {m.group(1): i for token, i in vocab.items() if (m := TARGET_TOKEN.fullmatch(token))}

    def model_inputs(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[str]:
        # source_lang is not checked: MADLAD takes no source tag, so any source is acceptable input.
        self.check_language(target_lang, "target")
        return [f"<2{target_lang}> {text}" for text in texts]
