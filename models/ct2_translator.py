"""M2M100, NLLB-200 and MADLAD on CTranslate2: the same tokenizer, language prefixes, length limits, decoding
and duplicate merging as the transformers path (they are inherited); only beam search runs in
CTranslate2, on a model converted once from the same checkpoint (see ct2_convert.py).

The transformers path's forced first token (M2M100's `__xx__`, NLLB's `fra_Latn`) becomes CTranslate2's target prefix;
MADLAD's `<2xx>` stays in the source text. `max_new_tokens` is `max_decoding_length`: both count
the generated tokens, the forced language token included.
"""
from __future__ import annotations

import os
from typing import Sequence

from xmdata.runtime import settings

from ._seq2seq import DEFAULT_MAX_INPUT_TOKENS, TranslationBatch, check_beams, merge_duplicates
from .base import Candidate, ModelError
from .ct2_convert import ensure_converted, import_ctranslate2, resolve_compute_type
from .m2m100 import M2M100Translator
from .madlad import MadladTranslator
from .nllb import NllbTranslator


class CTranslate2Engine:
    """Mixin placed before a Seq2SeqTranslator subclass: replaces load, tokenize and predict."""

    def load(self) -> None:
        ctranslate2 = import_ctranslate2()
        if self.spec.option("compute_type") is None:  # TranslatorOptions.spec() sets it; it has no default here
            raise ModelError(f"{self.spec.backend}: a ctranslate2 spec needs its compute_type option")
        # TranslatorOptions.spec() resolved `auto` already; a spec written by hand may still say it.
        self.compute_type = resolve_compute_type(self.spec.option("compute_type"), self.spec.device, self.spec.dtype)
        path = ensure_converted(self.spec, self.compute_type)
        device, _, index = self.spec.device.partition(":")
        # Threads as torch takes them: the worker's share (OMP_NUM_THREADS, which a LocalCluster
        # sets per worker), else one per available core; the spec's `threads` option overrides.
        threads = (self.spec.option("threads") or settings.OMP_NUM_THREADS.get()
                   or len(os.sched_getaffinity(0)))
        self.model = ctranslate2.Translator(path, device=device, device_index=int(index or 0),
                                            compute_type=self.compute_type, inter_threads=1,
                                            intra_threads=threads if device == "cpu" else 0)
        self.load_tokenizer()
        config = self._from_pretrained("AutoConfig")  # the checkpoint's limits, without its weights
        positions = getattr(config, "max_position_embeddings", DEFAULT_MAX_INPUT_TOKENS)
        self.max_input_tokens = (self.spec.option("max_input_tokens")
                                 or min(positions, self.tokenizer.model_max_length))

    def tokenize(self, texts: Sequence[str]) -> dict:
        ids = self.tokenizer(list(texts), truncation=True, max_length=self.max_input_tokens)["input_ids"]
        return {"tokens": [self.tokenizer.convert_ids_to_tokens(row) for row in ids]}

    def predict(self, batch: TranslationBatch, num_beams: int, num_candidates: int,
                max_new_tokens: int) -> list[list[Candidate]]:
        if not check_beams(batch, num_beams, num_candidates):
            return []
        forced = batch.generate_kwargs.get("forced_bos_token_id")
        prefix = None if forced is None else [[self.tokenizer.convert_ids_to_tokens(forced)]] * batch.size
        results = self.model.translate_batch(
            batch.inputs["tokens"], target_prefix=prefix, beam_size=num_beams, num_hypotheses=num_candidates,
            max_decoding_length=max_new_tokens, max_input_length=0,  # inputs are truncated already
            return_scores=True)
        candidates = []
        for result in results:
            texts = self.decode_ids([self.tokenizer.convert_tokens_to_ids(h) for h in result.hypotheses])
            candidates.append(merge_duplicates(texts, result.scores))
        return candidates


class M2M100CT2Translator(CTranslate2Engine, M2M100Translator):
    pass


class MadladCT2Translator(CTranslate2Engine, MadladTranslator):
    pass


class NllbCT2Translator(CTranslate2Engine, NllbTranslator):
    """CTranslate2's M2M100 converter reads NLLB checkpoints (M2M100Config; its get_vocabulary appends
    the tokenizer's additional special tokens, the FLORES-200 codes)."""
