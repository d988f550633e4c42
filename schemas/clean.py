"""Contracts of the clean-set stages (`xmdata dedup`, `xmdata contamination`): the two kinds of table
they check, and the matches they write."""
from __future__ import annotations

import pyarrow as pa

from .contract import TableContract

CLEAN_IMAGES = TableContract(
    name="clean_images",
    schema=pa.schema([
        pa.field("id", pa.string()),
        pa.field("path", pa.string()),  # relative to the table's folder, or absolute
        pa.field("latitude", pa.float64()),
        pa.field("longitude", pa.float64()),
    ]),
    required=frozenset({"id", "path"}),
    description="Images to check for near-duplicates: id and path; coordinates optional.",
)

CLEAN_CAPTIONS = TableContract(
    name="clean_captions",
    schema=pa.schema([
        pa.field("id", pa.string()),
        pa.field("text", pa.string()),
        pa.field("language", pa.string()),
        pa.field("image_id", pa.string()),  # two captions of one image are never duplicates of each other
    ]),
    required=frozenset({"id", "text", "language"}),
    description="Captions to check: compared within one language, never two of one image.",
    text_columns=frozenset({"text", "language"}),
)

MATCHES_SCHEMA = pa.schema([
    pa.field("id", pa.string(), nullable=False),  # the input row
    pa.field("match_id", pa.string(), nullable=False),  # the row it matches (an id, a file's relative path, a key)
    pa.field("match_source", pa.string(), nullable=False),  # which reference; for dedup, the input itself
    pa.field("method", pa.string(), nullable=False),  # image_hash, image_embedding, exact_text, minhash, text_embedding
    pa.field("score", pa.float64(), nullable=False),  # in [0, 1], 1 = identical
    pa.field("measure", pa.float64(), nullable=False),  # the method's raw value, in measure_unit
    pa.field("measure_unit", pa.string(), nullable=False),  # hamming_bits, cosine, jaccard, normalised_equal
])

# What both sides show, written beside the matches: path/match_path (images) or text/match_text (captions).
MATCHES = TableContract(
    name="matches", schema=MATCHES_SCHEMA,
    required=frozenset({"id", "match_id", "match_source", "method", "score", "measure", "measure_unit"}),
    description="One row per match: the input row, what it matched where, by which method, how closely.",
)
