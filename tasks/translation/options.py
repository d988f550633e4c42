"""Typed options of the translation build: the Prefect UI renders them as a form with defaults, the
CLI's flags and the release config's `translator:` / `filters:` are generated from them, and they
go down typed: TranslatorOptions reaches each shard whole (inside the stage's params, with the
ModelSpec `spec()` resolves), and `qe_spec()` fills COMETKiwi's typed options (CometKiwiOptions,
which declares no default: these are the defaults)."""
from __future__ import annotations

import os
from typing import Annotated, Literal

from pydantic import BeforeValidator, Field, model_validator

from xmdata.models.base import ModelSpec, looks_like_path
from xmdata.runtime import storage
from xmdata.models.ct2_convert import COMPUTE_TYPES, ENGINES, resolve_compute_type
from xmdata.tasks.stage_params import BUNDLED_LID, Params
from xmdata.tasks.translation.llm_options import DEFAULT_PROMPT, LLM, LlmPrompt, Sampling
from xmdata.tasks.translation.mbr_options import MbrOptions

DEFAULT_TRANSLATORS = {"m2m100": "facebook/m2m100_1.2B", "madlad": "google/madlad400-3b-mt",
                       "nllb": "facebook/nllb-200-distilled-600M"}
DEFAULT_QE = "Unbabel/wmt22-cometkiwi-da"


def _local_or_hub(name: str) -> str:
    """Local paths become absolute: workers of another cluster run in another directory."""
    return storage.absolute(os.path.expanduser(name)) if looks_like_path(name) else name


def _lid_accept_text(value):
    """The CLI's spelling 'no=no,nn;tl=tl' is accepted wherever the mapping is."""
    if not isinstance(value, str):
        return value
    from xmdata.schemas import ContractError  # pyarrow: not at the CLI's import, which builds flags from this
    from xmdata.tasks.translation.languages import parse_lid_accept

    try:
        return parse_lid_accept(value)
    except ContractError as exc:
        raise ValueError(str(exc).removeprefix("--lid-accept: ")) from None


LidAccept = Annotated[dict[str, list[str]], BeforeValidator(_lid_accept_text)]


class TranslatorModel(Params):
    """Which translator runs, where and how: what `spec()` resolves into the shard's ModelSpec."""
    backend: Literal["m2m100", "madlad", "nllb", "llm"] = Field(
        "m2m100", description="translator family; llm: any causal LM with a chat template")
    model: str | None = Field(None, description="hub id or local path (default: M2M100 1.2B / MADLAD-400 3B / "
                              "NLLB-200 distilled 600M; llm: none, name one)")
    revision: str | None = Field(None, description="hub revision to pin")
    device: str = Field("cpu", description="cpu, cuda, cuda:1 …")
    dtype: Literal["float32", "bfloat16", "float16"] = Field("float32", description="translator weights")
    engine: Literal[ENGINES] = Field("transformers", description="beam search in transformers' generate() "
                                     "or in CTranslate2 (a model converted once from the same checkpoint)")
    compute_type: Literal[COMPUTE_TYPES] = Field(
        "auto", description="CTranslate2 compute type; auto: int8 on CPU, the dtype (or bfloat16) on a GPU")


class BeamSearch(Params):
    """How beam search runs: the generation options, declared once. A shard's record holds these
    by these names (tasks/translation/beam_search.py)."""
    num_beams: int = Field(100, ge=1, description="beam width (the paper: 100)")
    num_candidates: int = Field(25, ge=1, description="candidates kept per text (the paper: 25)")
    batch_tokens: int = Field(65536, ge=1, description="input tokens × beams per generate() call (a call holds inputs of one length)")
    batch_size: int = Field(8, ge=1, description="and at most this many inputs; a call with fewer is filled "
                            "with copies up to the number its length allows, so that a text's candidates do not "
                            "depend on the texts beside it (nor on the shard plan)")
    max_new_tokens_ratio: float = Field(2.0, gt=0, description="output limit: ratio × input tokens + extra")
    max_new_tokens_extra: int = Field(10, ge=0, description="the extra of the output limit")

    @model_validator(mode="after")
    def _candidates_within_beams(self):
        if self.num_candidates > self.num_beams and getattr(self, "sampling", None) is None:  # samples: no beams
            raise ValueError(f"num_candidates ({self.num_candidates}) must be <= num_beams ({self.num_beams})")
        return self

    def beam_search(self) -> dict:
        """The generation options alone, as a shard records them (sampling only when asked: a beam-search
        shard's params, and its hash, are as they were)."""
        sampler = self.sampler() if isinstance(self, Sampling) else None
        return {**self.model_dump(include=set(BeamSearch.model_fields)), **({"sampler": sampler} if sampler else {})}


class TranslatorOptions(Sampling, LlmPrompt, BeamSearch, TranslatorModel):  # fields: the model's, beam search's, the llm's, then these
    split_sentences: bool = Field(False, description="split texts longer than the model takes by sentence")

    @model_validator(mode="after")
    def _llm_options(self):
        """The llm fields with the llm backend only, and what each engine can do (one line each)."""
        if self.backend != LLM:
            given = [name for name in ("prompt", "sampling") if getattr(self, name) is not None]
            if given:
                raise ValueError(f"{', '.join(given)}: only with backend llm (a causal LM with a chat template)")
        elif self.model is None:
            raise ValueError("backend llm: name the model (a hub id or a local folder); it has no default checkpoint")
        if self.sampling is not None and self.engine == "ctranslate2":
            raise ValueError("sampling on CTranslate2 is refused: it has only a process-wide seed, so a unit's samples "
                             "would depend on its batch mates; use engine transformers (or beam search)")
        return self

    def candidate_width(self) -> int:
        """Sequences a unit holds in one generate() call: its beams, or its samples."""
        return self.num_candidates if self.sampling is not None else self.num_beams

    def engine_label(self) -> str:
        """What the candidates' `engine` column says of it: backend and model (`nllb:facebook/nllb-200-distilled-600M`);
        a model in a local folder by the folder's name alone, since the release must not depend on where
        a machine keeps it (`--models tiny`: XMDATA_CACHE/tiny-models-…/m2m100 is `m2m100:m2m100` on every
        machine). Two entries of a pool never share one (refused as the same engine twice)."""
        model = self.model or DEFAULT_TRANSLATORS[self.backend]
        if looks_like_path(model) and not storage.is_url(model):
            model = os.path.basename(os.path.normpath(os.path.expanduser(model)))
        return f"{self.backend}:{model}"

    def spec(self) -> ModelSpec:
        # The transformers engine adds no options: its specs, params hashes and shards stay as they were.
        engine = {} if self.engine == "transformers" else {
            "engine": self.engine, "compute_type": resolve_compute_type(self.compute_type, self.device, self.dtype)}
        if self.backend == LLM:  # what the model is asked is the model's: the prompt, resolved
            engine["prompt"] = self.prompt or DEFAULT_PROMPT
        return ModelSpec(self.backend, _local_or_hub(self.model or DEFAULT_TRANSLATORS[self.backend]),
                         self.revision, device=self.device, dtype=self.dtype, options=engine)


class FilterOptions(MbrOptions):  # select, mbr_metric, mbr_top_k: how the translation is chosen
    lid_model: str = Field(BUNDLED_LID, description=f"'{BUNDLED_LID}' (bundled) or a fastText model path")
    min_lid_prob: float = Field(0.5, ge=0, le=1, description="language ID probability a candidate needs")
    lid_accept: LidAccept = Field(default_factory=dict, description="extra LID labels per target, "
                                  "e.g. {'no': ['no', 'nn']}; on the command line 'no=no,nn;tl=tl'")
    qe_model: str = Field(DEFAULT_QE, description="COMETKiwi hub id or local checkpoint")
    qe_revision: str | None = Field(None, description="hub revision of the QE model")
    qe_device: str = Field("cpu", description="where COMETKiwi runs (the command line: --device)")
    qe_batch_size: int = Field(32, ge=1, description="at most this many pairs per COMETKiwi forward")
    qe_batch_tokens: int = Field(16384, ge=1, description="and at most this many tokens (a forward holds pairs of one length)")
    qe_precision: Literal["float32", "bfloat16", "float16"] = Field(
        "float32", description="COMETKiwi weights and forward; bfloat16/float16 halve its GPU memory (XXL)")
    min_qe: float | None = Field(None, description="reject chosen translations below this QE (off by default)")

    def lid_spec(self) -> ModelSpec:
        return ModelSpec("fasttext", self.lid_model if self.lid_model == BUNDLED_LID else _local_or_hub(self.lid_model))

    def qe_spec(self) -> ModelSpec:
        # The one place qe_* meets CometKiwiOptions' names: the prefix keeps the flat flags apart from the
        # translator's (--qe-batch-tokens, --batch-tokens); the names stay in the QE stage's params hash.
        return ModelSpec("cometkiwi", _local_or_hub(self.qe_model), self.qe_revision, device=self.qe_device,
                         options={"batch_size": self.qe_batch_size, "batch_tokens": self.qe_batch_tokens,
                                  "precision": self.qe_precision})

    @model_validator(mode="after")
    def _float16_on_gpu(self):
        if self.qe_precision == "float16" and not self.qe_device.startswith("cuda"):
            raise ValueError("qe_precision float16 needs a CUDA device (use bfloat16 or float32 on CPU)")
        return self
