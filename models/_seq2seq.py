"""What the Hugging Face encoder-decoder translators (M2M100, MADLAD) share: loading, beam search,
decoding and merging duplicate candidates. Subclasses say which classes to load and how the target
language is asked for.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Sequence

from .base import Candidate, ModelError, ModelSpec, hub_error, resolve_local_path

DEFAULT_MAX_INPUT_TOKENS = 512


@dataclass
class TranslationBatch:
    """Tokenised inputs (CPU tensors) and the generate() arguments that pick the target language."""

    size: int
    inputs: dict[str, Any]
    generate_kwargs: dict[str, Any] = field(default_factory=dict)


def merge_duplicates(texts: Sequence[str], scores: Sequence[float]) -> list[Candidate]:
    """One Candidate per distinct text; beams arrive best first, so the first copy has the best rank.
    An empty output (only special tokens) is no translation, and is not a candidate."""
    best: dict[str, Candidate] = {}
    for rank, (text, score) in enumerate(zip(texts, scores)):
        if text:
            best.setdefault(text, Candidate(text=text, rank=rank, sequence_score=float(score)))
    return list(best.values())


class Seq2SeqTranslator:
    model_class_name: str
    tokenizer_class_name: str

    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.model = None
        self.tokenizer = None
        self.languages: dict[str, int] = {}  # language code -> id of its language token
        self._dropped: dict[int, bool] = {}  # token id -> left out of decoded text (decode_ids)
        self.max_input_tokens = DEFAULT_MAX_INPUT_TOKENS
        self._tokenizer_lock = threading.Lock()  # M2M100 keeps the source language on the tokenizer

    def language_token_ids(self) -> dict[str, int]:
        raise NotImplementedError

    def _from_pretrained(self, class_name: str):
        import transformers

        if self.spec.is_local:
            source, kwargs = resolve_local_path(self.spec), {}
        else:
            source, kwargs = self.spec.name_or_path, {"revision": self.spec.revision}
        try:
            return getattr(transformers, class_name).from_pretrained(source, **kwargs)
        except Exception as exc:
            if self.spec.is_local:
                raise ModelError(f"{self.spec.backend}: cannot load {class_name} from {source}: {exc}") from exc
            raise hub_error(self.spec, exc) from exc

    def load(self) -> None:
        import torch

        # Model first: offline, slow tokenizers fail with a TypeError that names nothing.
        model = self._from_pretrained(self.model_class_name)
        self.model = model.to(device=self.spec.device, dtype=getattr(torch, self.spec.dtype)).eval()
        self.load_tokenizer()
        positions = getattr(model.config, "max_position_embeddings", DEFAULT_MAX_INPUT_TOKENS)
        self.max_input_tokens = (self.spec.option("max_input_tokens")
                                 or min(positions, self.tokenizer.model_max_length))

    def load_tokenizer(self) -> None:
        """The tokenizer alone: enough to list languages and count tokens before any model loads."""
        if self.tokenizer is None:
            self.tokenizer = self._from_pretrained(self.tokenizer_class_name)
            self.languages = self.language_token_ids()
            self._dropped = dict.fromkeys([*self.languages.values(), *self.tokenizer.all_special_ids], True)

    def supported_languages(self) -> list[str]:
        return sorted(self.languages)

    def check_language(self, lang: str, role: str) -> None:
        if lang not in self.languages:
            raise ValueError(f"{self.spec.backend}: {role} language {lang!r} is not supported by "
                             f"{self.spec.name_or_path}; supported: {', '.join(self.supported_languages())}")

    def model_inputs(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[str]:
        """The strings the tokenizer sees (MADLAD prefixes the target tag); checks both languages."""
        raise NotImplementedError

    def token_lengths(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[int]:
        """Untruncated input lengths in tokens, special tokens included, as prepare() would make them."""
        inputs = self.model_inputs(texts, source_lang, target_lang)
        if not inputs:  # tokenizers refuse an empty batch; an empty shard has nothing to count
            return []
        with self._tokenizer_lock:
            self.set_source_language(source_lang)
            return [len(ids) for ids in self.tokenizer(inputs, truncation=False)["input_ids"]]

    def set_source_language(self, source_lang: str) -> None:
        """Tokenizers that mark the source language hold it as state; callers hold the lock."""

    def prepare(self, texts: Sequence[str], source_lang: str, target_lang: str) -> TranslationBatch:
        inputs = self.model_inputs(texts, source_lang, target_lang)
        if not inputs:
            return TranslationBatch(size=0, inputs={})
        with self._tokenizer_lock:
            self.set_source_language(source_lang)
            tokens = self.tokenize(inputs)
        return TranslationBatch(len(inputs), tokens, self.generate_kwargs(target_lang))

    def generate_kwargs(self, target_lang: str) -> dict[str, Any]:
        return {}

    def tokenize(self, texts: Sequence[str]) -> dict[str, Any]:
        return dict(self.tokenizer(list(texts), return_tensors="pt", padding=True, truncation=True,
                                   max_length=self.max_input_tokens))

    def predict(self, batch: TranslationBatch, num_beams: int, num_candidates: int,
                max_new_tokens: int) -> list[list[Candidate]]:
        """Per input, up to num_candidates distinct translations, best first."""
        import torch

        if not check_beams(batch, num_beams, num_candidates):
            return []
        inputs = {name: tensor.to(self.model.device) for name, tensor in batch.inputs.items()}
        with torch.inference_mode():
            out = self.model.generate(
                **inputs, **batch.generate_kwargs, num_beams=num_beams, num_return_sequences=num_candidates,
                max_new_tokens=max_new_tokens, output_scores=True, return_dict_in_generate=True)
            scores = out.sequences_scores if num_beams > 1 else self._greedy_scores(out)
        texts = self.decode(out.sequences)
        scores = scores.float().cpu().tolist()
        k = num_candidates
        return [merge_duplicates(texts[i * k:(i + 1) * k], scores[i * k:(i + 1) * k])
                for i in range(batch.size)]

    def decode(self, sequences) -> list[str]:
        return self.decode_ids(sequences.tolist())

    def decode_ids(self, sequences: list[list[int]]) -> list[str]:
        """What `batch_decode(skip_special_tokens=True)` gives once language tokens are dropped. Both
        are dropped here by id: language tokens are not "special" to every tokenizer, and an untrained
        model may emit them anywhere; and a slow (Python) tokenizer skipping special tokens itself
        lists them again for every token (~20% of a tiny M2M100's beam search; the same text,
        tests/models/test_models.py)."""
        kept = [[t for t in seq if not self.dropped(t)] for seq in sequences]
        return [text.strip() for text in self.tokenizer.batch_decode(kept, skip_special_tokens=False)]

    def dropped(self, token_id: int) -> bool:
        """A language or special token's id, or an id the tokenizer reads as a special token (M2M100
        reads every id it has no piece for, its model's spare ones included, as `<unk>`), or an id
        beyond the tokenizer (an embedding's spare rows)."""
        if (known := self._dropped.get(token_id)) is not None:
            return known
        if token_id >= len(self.tokenizer):  # an embedding row with no token (NLLB's spare rows, whose id
            self._dropped[token_id] = True  # NllbTokenizer cannot convert: sentencepiece refuses it)
            return True
        token = self.tokenizer.convert_ids_to_tokens(token_id)
        self._dropped[token_id] = found = token in self.tokenizer.all_special_tokens
        return found

    def _greedy_scores(self, out):
        """Greedy search has no sequences_scores: mean log-prob over generated tokens, as beams report."""
        import torch

        steps = self.model.compute_transition_scores(out.sequences, out.scores, normalize_logits=True)
        generated = out.sequences[:, -steps.shape[1]:]
        real = generated != self.tokenizer.pad_token_id  # the padding after </s> is not scored
        return torch.where(real, steps, 0.0).sum(1) / real.sum(1).clamp(min=1)


def check_beams(batch: TranslationBatch, num_beams: int, num_candidates: int) -> bool:
    """Refuse impossible beam settings; False when there is nothing to translate."""
    if not 1 <= num_candidates <= num_beams:
        raise ValueError(f"need 1 <= num_candidates <= num_beams, got {num_candidates} and {num_beams}")
    return batch.size > 0
