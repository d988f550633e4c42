"""Any causal LM that ships a chat template, as a Translator (`backend: llm`): the text goes into the
run's prompt template (tasks/translation/llm_options.py; the languages by their English names, CLDR's
from babel), the prompt into the tokenizer's chat template as one user turn with the generation
prompt, and the reply is generated until the template's end-of-turn token or `max_new_tokens`.

Replies come back raw (`Reply`: its text, and whether the limit cut it short); cleaning and the
rejection rules are the stage's (tasks/translation/llm_replies.py), so the memo keeps what the model
said. Candidates are beams (`predict`) or per-unit samples (`sample`, llm_sampling.py), both through
transformers' generate(); prompts of one batch have one token length (the stage batches them so),
so nothing is padded.

What was checked against the installed transformers 4.57 (generation/utils.py): with
`do_sample=False` generate() adds none of the checkpoint's warpers (temperature, top_p, top_k come
from generation_config only when sampling), and `logits_processor=` entries run after its own; a
checkpoint's generation_config that says `do_sample: true` is overridden here, never followed.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Sequence

from ._seq2seq import check_beams
from .base import Candidate, ModelError, ModelSpec, hub_error, resolve_local_path

PROMPT_CACHE = 20_000  # prompts' token ids kept between the length count and the batches (a shard's units)
REPLY_MARK = "XMDATA-REPLY-MARK"  # an assistant turn's content, to find what the template puts after it


@dataclass(frozen=True)
class Reply(Candidate):
    """A raw reply: `truncated` when generation stopped at max_new_tokens, not at the end of the turn."""

    truncated: bool = False


@dataclass
class LlmBatch:
    size: int
    inputs: dict[str, Any] = field(default_factory=dict)
    keys: list[str] = field(default_factory=list)  # each prompt's unit key: the seed of its samples


@lru_cache(maxsize=1)
def english_names() -> dict[str, str]:
    """Language code -> English name, from CLDR (babel's locale data)."""
    from babel import Locale

    return dict(Locale("en").languages)


def language_name(code: str) -> str | None:
    names = english_names()
    return names.get(code) or names.get(code.replace("-", "_"))


class LlmTranslator:
    tokenizer_class_name = "AutoTokenizer"  # the languages record's key (models/languages.py)
    candidate_type = Reply

    def __init__(self, spec: ModelSpec):
        from .llm_prompt import DEFAULT_PROMPT, check_prompt

        self.spec = spec
        self.model = None
        self.tokenizer = None
        self.prompt = check_prompt(spec.option("prompt") or DEFAULT_PROMPT)
        self.stop_ids: list[int] = []
        self.pad_id: int | None = None
        self.max_input_tokens = 512
        self._ids: dict[tuple[str, str, str], list[int]] = {}
        self._ids_lock = threading.Lock()

    def _source(self) -> tuple[str, dict]:
        if self.spec.is_local:
            return resolve_local_path(self.spec), {}
        return self.spec.name_or_path, {"revision": self.spec.revision}

    def _load(self, loader, what: str):
        source, kwargs = self._source()
        try:
            return loader.from_pretrained(source, **kwargs)
        except Exception as exc:
            if self.spec.is_local:
                raise ModelError(f"llm: cannot load {what} from {source}: {type(exc).__name__}: "
                                 f"{str(exc).splitlines()[0] if str(exc) else ''}") from exc
            raise hub_error(self.spec, exc) from exc

    def load_tokenizer(self) -> None:
        """The tokenizer and its chat template, refused in one line without one; enough to count tokens."""
        if self.tokenizer is not None:
            return
        from transformers import AutoTokenizer

        tokenizer = self._load(AutoTokenizer, "its tokenizer")
        if not getattr(tokenizer, "chat_template", None):
            raise ModelError(f"llm: {self.spec.name_or_path} has no chat template (tokenizer_config.json's "
                             "chat_template or chat_template.jinja): backend llm takes instruction-tuned causal LMs "
                             "that ship one")
        self.tokenizer = tokenizer
        self.stop_ids = stop_ids(tokenizer)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.stop_ids[0]

    def load(self) -> None:
        import torch

        self.load_tokenizer()
        if self.spec.option("engine") != "ctranslate2":  # (CTranslate2's Generator: ct2_generator.py)
            from transformers import AutoModelForCausalLM

            model = self._load(AutoModelForCausalLM, "AutoModelForCausalLM")
            self.model = model.to(device=self.spec.device, dtype=getattr(torch, self.spec.dtype)).eval()
            config, generation = self.model.config, self.model.generation_config  # read with the weights
        else:
            from transformers import AutoConfig, GenerationConfig

            config = self._load(AutoConfig, "its config")
            source, kwargs = self._source()
            try:
                generation = GenerationConfig.from_pretrained(source, **kwargs)
            except OSError:  # no generation_config.json: the template's and the tokenizer's stops alone
                generation = None
        eos = generation.eos_token_id if generation is not None else None
        self.stop_ids = list(dict.fromkeys([*self.stop_ids, *([eos] if isinstance(eos, int) else eos or [])]))
        positions = getattr(config, "max_position_embeddings", 1024)
        # A prompt and its reply share the positions: a prompt takes at most half of them.
        self.max_input_tokens = self.spec.option("max_input_tokens") or min(positions, self.tokenizer.model_max_length) // 2

    def supported_languages(self) -> list[str]:
        return sorted(english_names())

    def check_language(self, lang: str, role: str) -> str:
        name = language_name(lang)
        if name is None:
            raise ValueError(f"llm: {role} language {lang!r} has no English name in CLDR (babel), so the prompt "
                             "cannot name it")
        return name

    def prompt_text(self, text: str, source_lang: str, target_lang: str) -> str:
        """The whole prompt as the model reads it: the user turn in the chat template, generation prompt added."""
        from .llm_prompt import render_prompt

        user = render_prompt(self.prompt, text, self.check_language(source_lang, "source"),
                             self.check_language(target_lang, "target"))
        return self.tokenizer.apply_chat_template([{"role": "user", "content": user}], tokenize=False,
                                                  add_generation_prompt=True)

    def prompt_ids(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[list[int]]:
        """Each text's prompt in token ids. Kept from the stage's length count (token_lengths) for its
        batches (prepare), so a prompt is rendered and tokenised once, not twice; bounded per shard's worth."""
        keys = [(t, source_lang, target_lang) for t in texts]
        with self._ids_lock:  # a worker's threads share the loaded model
            new = list(dict.fromkeys(k for k in keys if k not in self._ids))
            if len(self._ids) + len(new) > PROMPT_CACHE:
                self._ids.clear()
                new = list(dict.fromkeys(keys))
            if new:
                # The template writes the special tokens (a BOS among them) itself: none added again.
                prompts = [self.prompt_text(*k) for k in new]
                self._ids.update(zip(new, self.tokenizer(prompts, add_special_tokens=False)["input_ids"]))
            return [list(self._ids[k]) for k in keys]

    def token_lengths(self, texts: Sequence[str], source_lang: str, target_lang: str) -> list[int]:
        return [len(ids) for ids in self.prompt_ids(texts, source_lang, target_lang)]

    def prepare(self, texts: Sequence[str], source_lang: str, target_lang: str, keys: Sequence[str] = ()) -> LlmBatch:
        """Prompts of one length in a tensor; of several (a caller outside the stage) padded on the left."""
        import torch

        ids = self.prompt_ids(texts, source_lang, target_lang)
        if not ids:
            return LlmBatch(0)
        width = max(map(len, ids))
        rows = [[self.pad_id] * (width - len(row)) + row for row in ids]
        mask = [[0] * (width - len(row)) + [1] * len(row) for row in ids]
        return LlmBatch(len(ids), {"input_ids": torch.tensor(rows), "attention_mask": torch.tensor(mask)}, list(keys))

    def _generate(self, batch: LlmBatch, max_new_tokens: int, **kwargs):
        import torch

        inputs = {name: tensor.to(self.model.device) for name, tensor in batch.inputs.items()}
        with torch.inference_mode():
            return self.model.generate(
                **inputs, max_new_tokens=max_new_tokens, eos_token_id=self.stop_ids, pad_token_id=self.pad_id,
                do_sample=False, temperature=None, top_p=None, top_k=None, return_dict_in_generate=True, **kwargs)

    def predict(self, batch: LlmBatch, num_beams: int, num_candidates: int, max_new_tokens: int) -> list[list[Reply]]:
        """Per prompt, num_candidates beams (best first), raw."""
        if not check_beams(batch, num_beams, num_candidates):
            return []
        if num_beams == 1:
            out = self._generate(batch, max_new_tokens, output_logits=True)
            scores = mean_log_probs(out.sequences, out.logits, self.stop_ids, self.pad_id)
        else:
            out = self._generate(batch, max_new_tokens, num_beams=num_beams, num_return_sequences=num_candidates,
                                 output_scores=True)
            scores = out.sequences_scores.float().cpu().tolist()
        return self.replies(out.sequences, batch.inputs["input_ids"].shape[1], scores, num_candidates)

    def sample(self, batch: LlmBatch, sampler: dict, num_candidates: int, max_new_tokens: int) -> list[list[Reply]]:
        """Per prompt, num_candidates samples, each drawn with its own generator (llm_sampling.py): a
        unit's samples are its own whatever its batch; ranked by sample index."""
        from .llm_sampling import sampling_processors

        if batch.size == 0:
            return []
        if len(batch.keys) != batch.size:
            raise ValueError("sampling needs each prompt's unit key (the seed of its samples)")
        rows = {name: tensor.repeat_interleave(num_candidates, dim=0) for name, tensor in batch.inputs.items()}
        expanded = LlmBatch(batch.size * num_candidates, rows)
        out = self._generate(expanded, max_new_tokens, output_logits=True,
                             logits_processor=sampling_processors(sampler, batch.keys, num_candidates))
        scores = mean_log_probs(out.sequences, out.logits, self.stop_ids, self.pad_id)
        return self.replies(out.sequences, batch.inputs["input_ids"].shape[1], scores, num_candidates)

    def replies(self, sequences, prompt_length: int, scores: list[float], k: int) -> list[list[Reply]]:
        generated = sequences[:, prompt_length:].tolist()
        out = []
        for row, score in zip(generated, scores):
            end = next((i for i, t in enumerate(row) if t in self.stop_ids), None)
            text = self.tokenizer.decode(row[:end], skip_special_tokens=True).strip()
            out.append((text, end is None, score))
        return [[Reply(text, rank, float(score), truncated)
                 for rank, (text, truncated, score) in enumerate(out[i * k:(i + 1) * k])]
                for i in range(len(out) // k)]


def mean_log_probs(sequences, logits: tuple, stop_ids: list[int], pad_id: int) -> list[float]:
    """Each sequence's mean log-probability of its generated tokens, its end-of-turn token included,
    under the model's own distribution (the raw logits, before any warper or noise)."""
    import torch

    steps = torch.stack(logits, dim=1).float().log_softmax(-1)  # rows x steps x vocab
    generated = sequences[:, -steps.shape[1]:]
    chosen = steps.gather(-1, generated.unsqueeze(-1)).squeeze(-1)
    stops = torch.isin(generated, torch.tensor(stop_ids, device=generated.device))
    # A token counts up to and including the first stop; what follows is padding.
    after_stop = (stops.cumsum(1) - stops.long()) > 0
    real = ~after_stop
    return (torch.where(real, chosen, 0.0).sum(1) / real.sum(1).clamp(min=1)).cpu().tolist()


def stop_ids(tokenizer) -> list[int]:
    """The template's end-of-turn token first (the first special token the template writes after an
    assistant turn's content: Llama 3's <|eot_id|>, ChatML's <|im_end|>, Gemma's <end_of_turn>), then
    the tokenizer's EOS; a ModelError when there is neither."""
    found = []
    try:
        rendered = tokenizer.apply_chat_template(
            [{"role": "user", "content": "x"}, {"role": "assistant", "content": REPLY_MARK}], tokenize=False)
    except Exception as exc:  # noqa: BLE001 - a template that cannot render a reply names no end of turn
        rendered = ""
        reason = f"{type(exc).__name__}: {exc}"
    else:
        reason = "the template writes no special token after a reply"
    if REPLY_MARK in rendered:
        after = rendered[rendered.rindex(REPLY_MARK) + len(REPLY_MARK):]
        special = set(tokenizer.all_special_ids) | set(tokenizer.added_tokens_decoder)
        found += [i for i in tokenizer(after, add_special_tokens=False)["input_ids"] if i in special][:1]
    if tokenizer.eos_token_id is not None:
        found.append(tokenizer.eos_token_id)
    if not found:
        raise ModelError(f"llm: {tokenizer.name_or_path}: no end-of-turn token ({reason}) and no EOS token")
    return list(dict.fromkeys(found))
