"""Language ID stage: every text gets fastText's label and probability (score only, no filtering)."""
from __future__ import annotations

import re

import pyarrow as pa

from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
from xmdata.runtime.stage import Stage

from .rejects import blank_mask, concat_rejects, split_by_mask

STAGE = "language_id"
# fastText labels ~70k short texts per second per core: below this, shipping shards costs more.
LIGHT_ROWS = 20_000
# Image placeholders of multimodal instruction data (MMEB's <|image_1|>, LLaVA's <image>): not language.
IMAGE_PLACEHOLDER = re.compile(r"<\|?image[^<>]{0,16}\|?>", re.IGNORECASE)


def has_letters(text: str) -> bool:
    """A text fastText can label: some letter left once image placeholders are removed. Control
    characters, digits, punctuation or a bare <|image_1|> get a confident label that means nothing."""
    return any(ch.isalpha() for ch in IMAGE_PLACEHOLDER.sub("", text))


def split_unlabelable(table: pa.Table, column: str = "text") -> tuple[pa.Table, pa.Table]:
    """(rows with a text to label, rejects: empty_text, no_letters). Also `xmdata validate`'s."""
    kept, empty = split_by_mask(table, blank_mask(table.column(column)), STAGE, "empty_text", column)
    letterless = pa.array([not has_letters(t) for t in kept.column(column).to_pylist()], pa.bool_())
    kept, no_letters = split_by_mask(kept, letterless, STAGE, "no_letters", column)
    return kept, concat_rejects([empty, no_letters])


def identify_language(table: pa.Table, params: dict) -> tuple[pa.Table, pa.Table]:
    """Add lid_label / lid_prob; rows with no text are rejected as empty_text, rows without a letter
    (digits, symbols, control characters, image placeholders only) as no_letters."""
    column = params["text_column"]
    kept, rejects = split_unlabelable(table, column)
    model = get_model("language_identifier", ModelSpec(**params["model"]))
    # Placeholders are not words of the text's language (fastText reads "<|image_1|> Ein Hund." as en).
    texts = [IMAGE_PLACEHOLDER.sub(" ", t) for t in kept.column(column).to_pylist()]
    labels, probs = model.predict(model.prepare(texts))
    kept = kept.append_column("lid_label", pa.array(labels, pa.string()))
    kept = kept.append_column("lid_prob", pa.array(probs, pa.float32()))
    return kept, rejects


def language_id_stage(model: ModelSpec, text_column: str = "text") -> Stage:
    return Stage(STAGE, version="2", fn=identify_language,  # 2: no_letters rejects, placeholders not read
                 params={"model": model.to_dict(), "text_column": text_column}, inline_rows=LIGHT_ROWS)
