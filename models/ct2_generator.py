"""An `llm` translator's beam search on CTranslate2's Generator: the same tokenizer, chat template,
prompt, end-of-turn tokens and raw replies as the transformers path (inherited from llm.py); only the
search runs in CTranslate2, on a model converted once from the same checkpoint (ct2_convert.py: its
TransformersConverter takes Llama, Gemma 2/3, Qwen 2/3, Mistral and Phi-3 in 4.8.5; another
architecture is refused in one line, naming `engine transformers`).

Sampling is refused (TranslatorOptions, before any model loads): CTranslate2 draws from one
process-wide seed (`ctranslate2.set_random_seed`), so a unit's samples would depend on its batch
mates. Checked against the installed 4.8.5's `Generator.generate_batch`: `end_token` takes token
strings, `return_end_token=True` keeps the one it stopped at (how `truncated` is told), and with
`include_prompt_in_result=False` the prompt is forwarded once and only the generated tokens come back.
"""
from __future__ import annotations

import os

from xmdata.runtime import settings

from .base import ModelError
from .ct2_convert import ensure_converted, import_ctranslate2, resolve_compute_type
from ._seq2seq import check_beams
from .llm import LlmBatch, LlmTranslator, Reply


class LlmCT2Generator(LlmTranslator):
    def load(self) -> None:
        ctranslate2 = import_ctranslate2()
        if self.spec.option("compute_type") is None:
            raise ModelError("llm: a ctranslate2 spec needs its compute_type option")
        self.compute_type = resolve_compute_type(self.spec.option("compute_type"), self.spec.device, self.spec.dtype)
        path = ensure_converted(self.spec, self.compute_type)
        device, _, index = self.spec.device.partition(":")
        threads = (self.spec.option("threads") or settings.OMP_NUM_THREADS.get() or len(os.sched_getaffinity(0)))
        self.model = ctranslate2.Generator(path, device=device, device_index=int(index or 0),
                                           compute_type=self.compute_type, inter_threads=1,
                                           intra_threads=threads if device == "cpu" else 0)
        super().load()  # the tokenizer, its template and limits; no transformers weights on this engine
        self.stop_tokens = self.tokenizer.convert_ids_to_tokens(self.stop_ids)  # as generate_batch takes them

    def prepare(self, texts, source_lang, target_lang, keys=()) -> LlmBatch:
        ids = self.prompt_ids(texts, source_lang, target_lang)
        return LlmBatch(len(ids), {"tokens": [self.tokenizer.convert_ids_to_tokens(row) for row in ids]}, list(keys))

    def predict(self, batch: LlmBatch, num_beams: int, num_candidates: int, max_new_tokens: int) -> list[list[Reply]]:
        if not check_beams(batch, num_beams, num_candidates):
            return []
        results = self.model.generate_batch(
            batch.inputs["tokens"], beam_size=num_beams, num_hypotheses=num_candidates, max_length=max_new_tokens,
            end_token=self.stop_tokens, return_end_token=True, include_prompt_in_result=False, return_scores=True)
        out = []
        for result in results:
            replies = []
            for rank, (ids, score) in enumerate(zip(result.sequences_ids, result.scores)):
                ended = bool(ids) and ids[-1] in self.stop_ids
                text = self.tokenizer.decode(ids[:-1] if ended else ids, skip_special_tokens=True).strip()
                replies.append(Reply(text, rank, float(score), truncated=not ended))
            out.append(replies)
        return out

    def sample(self, *args, **kwargs):
        raise ModelError("llm: sampling on CTranslate2 is refused: it has only a process-wide seed; use engine transformers")
