"""Language ID stage: every text gets fastText's label and probability (score only, no filtering)."""
from __future__ import annotations

import pyarrow as pa

from xmdata.models.base import ModelSpec
from xmdata.models.registry import get_model
from xmdata.runtime.stage import Stage

from .rejects import blank_mask, split_by_mask

STAGE = "language_id"
# fastText labels ~150k short texts a second a core; sending shards to the warm cluster costs ~0.6
# CPU-s and ~1 s of wall (the client's distributed import and connection, shard files, transfers).
# On 2 cores, 200k captions took 5.2 s in-process and 5.4 s on the cluster, at 1.2x vs 1.6x the
# bare loop's CPU-s (./run bench orchestration): parallel pays for language ID only past ~250k rows.
LIGHT_ROWS = 250_000


def identify_language(table: pa.Table, params: dict) -> tuple[pa.Table, pa.Table]:
    """Add lid_label / lid_prob; rows with no text are rejected as empty_text."""
    column = params["text_column"]
    kept, rejects = split_by_mask(table, blank_mask(table.column(column)), STAGE, "empty_text", column)
    model = get_model("language_identifier", ModelSpec(**params["model"]))
    labels, probs = model.predict(model.prepare(kept.column(column).to_pylist()))
    kept = kept.append_column("lid_label", pa.array(labels, pa.string()))
    kept = kept.append_column("lid_prob", pa.array(probs, pa.float32()))
    return kept, rejects


def language_id_stage(model: ModelSpec, text_column: str = "text") -> Stage:
    return Stage(STAGE, version="1", fn=identify_language,
                 params={"model": model.to_dict(), "text_column": text_column}, inline_rows=LIGHT_ROWS)
