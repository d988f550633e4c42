"""Language ID stage: every text gets fastText's label and probability (score only, no filtering)."""
from __future__ import annotations

import re

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
from xmdata.runtime.params import Params
from xmdata.runtime.stage import Stage
from xmdata.schemas.languages import label_code


from xmdata.tasks.build.rejects import blank_mask, concat_rejects, split_by_mask

STAGE = "language_id"
# fastText labels ~150k short texts a second a core; sending shards to the warm cluster costs ~0.4
# CPU-s more (the client's distributed import and connection, shard files, transfers). 200k captions
# on the quiet 2-core machine: in-process 4.8 s wall at 1.43x the bare loop's CPU-s, on the warm
# cluster 4.0 s at 1.50x (./run bench orchestration): below ~250k rows the cluster buys less than a
# second of wall with more CPU, so language ID stays in the command's process up to there.
LIGHT_ROWS = 250_000
# Image placeholders of multimodal instruction data (MMEB's <|image_1|>, LLaVA's <image>): not language.
IMAGE_PLACEHOLDER = re.compile(r"<\|?image[^<>]{0,16}\|?>", re.IGNORECASE)
LETTER = re.compile(r"[^\W\d_]")  # a word character that is no digit and no underscore
PLAIN_TEXT = "^[^<]*[A-Za-z][^<]*$"  # no placeholder can be in it, and it has a LETTER: read as it is


def lid_text(text: str) -> str | None:
    """What fastText reads of a text: image placeholders removed; None when no letter is left, since
    control characters, digits, symbols or a bare <|image_1|> get a confident label that means nothing.
    One regex search a text (C speed): language ID stays near the bare fastText loop."""
    if "<" in text:
        text = IMAGE_PLACEHOLDER.sub(" ", text)
    return text if LETTER.search(text) else None


def split_unlabelable(table: pa.Table, column: str = "text") -> tuple[pa.Table, pa.Table, list[str]]:
    """(rows with a text to label, rejects: empty_text, no_letters, the texts fastText reads). Also
    `xmdata validate`'s."""
    kept, empty = split_by_mask(table, blank_mask(table.column(column)), STAGE, "empty_text", column)
    values = kept.column(column)
    texts = values.to_pylist()
    # A text with an ASCII letter and no "<" is read as it is, found by Arrow in one pass (RE2);
    # lid_text decides the others, a call each (most captions of Latin script need none).
    decide = pc.invert(pc.match_substring_regex(values, PLAIN_TEXT)).to_numpy(zero_copy_only=False)
    letterless = np.zeros(len(texts), dtype=bool)
    for index in np.flatnonzero(decide).tolist():
        texts[index] = lid_text(texts[index])
        letterless[index] = texts[index] is None
    kept, no_letters = split_by_mask(kept, pa.array(letterless), STAGE, "no_letters", column)
    return kept, concat_rejects([empty, no_letters]), [t for t in texts if t is not None]


class LanguageIdShard(Params):
    """What every shard of the stage runs with; hashed into its completion record."""
    model: ModelSpec
    text_column: str


def identify_language(table: pa.Table, params: LanguageIdShard) -> tuple[pa.Table, pa.Table]:
    """Add lid_label (the project's code of the model's label, null for one that names no single
    language), lid_prob and lid_label_raw (the model's own label); rows with no text are rejected as empty_text, rows without a letter
    (digits, symbols, control characters, image placeholders only) as no_letters."""
    column = params.text_column
    # Placeholders are not words of the text's language (fastText reads "<|image_1|> Ein Hund." as en).
    kept, rejects, texts = split_unlabelable(table, column)
    model = get_model("language_identifier", params.model)
    labels, probs = model.predict(model.prepare(texts))
    raw = pa.array(labels, pa.string())
    kept = kept.append_column("lid_label", label_codes(raw))
    kept = kept.append_column("lid_prob", pa.array(probs, pa.float32()))
    kept = kept.append_column("lid_label_raw", raw)
    return kept, rejects


def label_codes(labels: pa.Array) -> pa.Array:
    """`label_code` of every label, computed once per distinct label (a model has a few hundred):
    0.01 CPU-s over 200k labels where a call a row took 0.03."""
    encoded = labels.dictionary_encode()
    codes = pa.array([label_code(label) for label in encoded.dictionary.to_pylist()], pa.string())
    return codes.take(encoded.indices)


def language_id_stage(model: ModelSpec, text_column: str = "text") -> Stage:
    return Stage(STAGE, version="3", fn=identify_language,  # 3: lid_label in the project's codes, lid_label_raw
                 params=LanguageIdShard(model=model, text_column=text_column), inline_rows=LIGHT_ROWS)
