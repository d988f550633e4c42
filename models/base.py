"""The model contract: a spec that names a model, and the three-method interface every backend has.

A backend is a class with ``load()``, ``prepare(...)`` and ``predict(batch)``: load once per worker
process, prepare a batch on the CPU (tokenise, decode), predict on the device. Kinds differ only in
what prepare takes and predict returns; each kind's Protocol below says so.
"""
from __future__ import annotations

import os
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, Sequence, TypeVar

from xmdata.runtime.storage import is_url, local


T = TypeVar("T")


class ModelError(RuntimeError):
    """A model cannot be found or loaded; the message names it and says what to do."""


@dataclass(frozen=True)
class ModelSpec:
    """Which model: a backend name, a hub id or local path, and for hub ids a pinned revision."""

    backend: str
    name_or_path: str
    revision: str | None = None
    device: str = "cpu"
    dtype: str = "float32"
    options: tuple[tuple[str, Any], ...] = field(default_factory=tuple)

    def __post_init__(self):
        # Options arrive as a dict, or as lists after a JSON round trip: keep them hashable.
        items = self.options.items() if isinstance(self.options, dict) else self.options
        object.__setattr__(self, "options", tuple(sorted((str(k), v) for k, v in items)))

    @property
    def is_local(self) -> bool:
        return looks_like_path(self.name_or_path)

    def option(self, key: str, default: Any = None) -> Any:
        return dict(self.options).get(key, default)

    def typed_options(self, model: type[T]) -> T:
        """The options as the backend's typed model. Its fields have no defaults: the params model
        that built this spec (e.g. FilterOptions.qe_spec) declares them, once."""
        from pydantic import ValidationError

        try:
            return model.model_validate(dict(self.options))
        except ValidationError as exc:
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
            raise ModelError(f"{self.backend} {self.name_or_path}: options {problems}") from None

    def to_dict(self) -> dict:
        return asdict(self)


def looks_like_path(name: str) -> bool:
    """A hub id is 'org/name'; anything absolute, relative-dotted, ~ or existing is a local path, and
    a URL (s3://, gs://, hf://, file://) is a path in a store."""
    return name.startswith(("/", "./", "../", "~")) or "://" in name or os.path.exists(name)


def resolve_local_path(spec: ModelSpec) -> str:
    """The absolute local path of a spec (a URL's copy in the model cache, fetched once), or a
    ModelError that names the missing path."""
    if is_url(spec.name_or_path):
        from .remote import fetch_model

        return fetch_model(spec.name_or_path, spec.backend)
    path = os.path.abspath(os.path.expanduser(local(spec.name_or_path)))
    if not os.path.exists(path):
        raise ModelError(f"{spec.backend}: model path does not exist: {path}")
    return path


def hub_error(spec: ModelSpec, exc: Exception) -> ModelError:
    """One clear error for a hub id that cannot be fetched (no network, unknown id, bad revision)."""
    rev = f" at revision {spec.revision}" if spec.revision else ""
    return ModelError(
        f"{spec.backend}: cannot load hub model {spec.name_or_path!r}{rev}: {type(exc).__name__}: "
        f"{str(exc).splitlines()[0] if str(exc) else ''}. Without network access, pass a local path "
        f"(for example one built by `xmdata models build-tiny DIR`)."
    )


@dataclass(frozen=True)
class Candidate:
    """One translation candidate: its text, beam rank (0 = best) and length-normalised log-prob."""

    text: str
    rank: int
    sequence_score: float


class LanguageIdentifier(Protocol):
    def load(self) -> None: ...
    def prepare(self, texts: Sequence[str]) -> Any: ...
    def predict(self, batch: Any) -> tuple[list[str], list[float]]:
        """Per text: the top ISO-ish label (as the model names it) and its probability."""


class Translator(Protocol):
    def load(self) -> None: ...
    def supported_languages(self) -> list[str]: ...
    def prepare(self, texts: Sequence[str], source_lang: str, target_lang: str) -> Any: ...
    def predict(self, batch: Any, num_beams: int, num_candidates: int,
                max_new_tokens: int) -> list[list[Candidate]]: ...


class QualityEstimator(Protocol):
    def load(self) -> None: ...
    def prepare(self, sources: Sequence[str], translations: Sequence[str]) -> Any: ...
    def predict(self, batch: Any, sizes: Any = None) -> list[float | None]:
        """One score per pair, in order; None for a pair that ran out of memory even alone.
        `sizes` (oom_backoff.BatchSizes) gets the sizes of batches that ran out and were halved."""


class ClipScorer(Protocol):
    def load(self) -> None: ...
    def prepare(self, images: Sequence[Any], texts: Sequence[str]) -> Any: ...
    def predict(self, batch: Any) -> tuple[Any, Any]:
        """L2-normalised image and text embeddings as float32 numpy arrays."""
