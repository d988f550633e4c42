"""Label words per target language: what a translator writes for "Question" and "Answer".

data/qa_labels.json holds them for every language of the 36-language table, in M2M100 and MADLAD
codes. A target with no entry gets its words derived once, in the flow process, by translating the
English words with the run's own model; the run stores them in its outputs (qa_labels.json) and
says so, so that extraction never silently falls back to English alone.
"""
from __future__ import annotations

import json
import os
import re
from functools import lru_cache

from xmdata.data import DATA_DIR
from xmdata.runtime import storage

LABELS_FILE = os.path.join(DATA_DIR, "qa_labels.json")
ENGLISH = {"question": ["Question"], "answer": ["Answer"]}
# What a model may put around a lone word: punctuation, quotes, a colon.
_TRIM = re.compile(r"^[\W_]+|[\W_]+$")


@lru_cache(maxsize=4)
def load_label_table(path: str = LABELS_FILE) -> dict[str, dict[str, list[str]]]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)["labels"]


def known_labels(targets: list[str], table: dict | None = None) -> tuple[dict, list[str]]:
    """({target: {"question": [...], "answer": [...], "source": "data"}}, targets with no entry)."""
    table = load_label_table() if table is None else table
    found = {t: {**table[t], "source": "data/qa_labels.json"} for t in targets if t in table}
    return found, [t for t in targets if t not in table]


def _plausible(word: str) -> bool:
    """A label is a word or two; a sentence back means the model did not translate a label."""
    return bool(word) and len(word.split()) <= 3 and len(word) <= 40


def derive_labels(translator, source_language: str, targets: list[str], max_new_tokens: int = 16) -> dict:
    """Translate the English label words into each target (greedy) with a loaded translator.

    A derived pair that is empty, longer than a few words, or the same word for both labels cannot
    split anything: it is dropped and the target keeps English labels only; `source` says so."""
    derived = {}
    for target in targets:
        batch = translator.prepare(["Question", "Answer"], source_language, target)
        outputs = translator.predict(batch, 1, 1, max_new_tokens)
        words = [_TRIM.sub("", c[0].text) if c else "" for c in outputs]
        question, answer = words
        if all(_plausible(w) for w in words) and question.casefold() != answer.casefold():
            derived[target] = {"question": [question], "answer": [answer],
                               "source": "derived: translated 'Question'/'Answer' with the run's model"}
        else:
            derived[target] = {"question": [], "answer": [],
                               "source": f"derivation failed (got {question!r}/{answer!r}): English labels only"}
    return derived


def with_english(entry: dict) -> dict[str, list[str]]:
    """The label words extraction accepts: the target's and the English ones (models keep English)."""
    return {kind: list(dict.fromkeys(entry.get(kind, []) + ENGLISH[kind])) for kind in ("question", "answer")}


def resolve_labels(targets: list[str], translator_factory, source_language: str, model: str,
                   out: str | None = None, table: dict | None = None) -> dict:
    """Labels for every target; missing ones derived (translator_factory() loads the model only then),
    reusing a previous run's derived words from OUT/qa_labels.json when it has them."""
    found, missing = known_labels(targets, table)
    previous = {}
    path = storage.join(out, "qa_labels.json") if out else None
    if path and storage.exists(path):
        previous = json.loads(storage.read_text(path)).get("labels", {})
    reuse = {t: previous[t] for t in missing if previous.get(t, {}).get("model") == model}
    todo = [t for t in missing if t not in reuse]
    derived = derive_labels(translator_factory(), source_language, todo) if todo else {}
    derived = {t: {**entry, "model": model} for t, entry in derived.items()}
    labels = {**found, **reuse, **derived}
    return {t: labels[t] for t in targets}
