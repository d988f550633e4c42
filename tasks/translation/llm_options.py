"""What an `llm` translator (a causal LM with a chat template, models/llm.py) is asked, declared once: the
prompt's template and the candidate source (beam search, or sampling by one of three rules with its
value). They are fields of TranslatorOptions, so the CLI's flags, the UI form and a release config's
`translator:` are these; the bounds live here, so every door refuses the same values in one line.

A field at its default adds nothing to a shard's params (TranslatorOptions.beam_search, .spec): the
params hashes of the other backends' finished shards are unchanged (tests/cli/test_params_hashes.py).
"""
from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator

from xmdata.models.llm_prompt import DEFAULT_PROMPT, check_prompt
from xmdata.runtime.params import Params

LLM = "llm"
SAMPLINGS = ("epsilon", "top_p", "temperature")


class LlmPrompt(Params):
    prompt: str | None = Field(None, description="llm: the user turn's template, with {text} and optionally "
                               "{source} and {target} (English language names); default: " + repr(DEFAULT_PROMPT))

    @field_validator("prompt")
    @classmethod
    def _has_text(cls, value):
        return value if value is None else check_prompt(value)


class Sampling(Params):
    """Sampled candidates (llm on transformers): num_candidates samples a unit, each its own (models/llm_sampling.py)."""
    sampling: Literal[SAMPLINGS] | None = Field(None, description="llm: sample the candidates (num_candidates a "
                                                "unit) by epsilon, top_p or temperature, with that field's value, "
                                                "instead of beam search")
    epsilon: float = Field(0.02, gt=0, lt=1, description="sampling epsilon: tokens below this probability are "
                           "left out (Freitag et al. 2023: 0.02 for MBR)")
    top_p: float = Field(0.9, gt=0, lt=1, description="sampling top_p: the smallest set of tokens with this much "
                         "probability")
    temperature: float = Field(1.0, gt=0, description="sampling temperature: the logits divided by it")

    def sampler(self) -> dict | None:
        """The rule and its value, as a shard records them and the backend receives them; None: beam search."""
        return None if self.sampling is None else {"sampling": self.sampling, "value": getattr(self, self.sampling)}
