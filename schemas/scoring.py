"""Contracts of the scoring stage: image–text pairs in, one scores row per pair out.

A pair names its image by a path under an image root or by its encoded bytes; references, when a
run uses them, sit in a list column the user names (`--references-column`).
"""
from __future__ import annotations

import pyarrow as pa

from .contract import ContractError, TableContract, Violation

IMAGE_COLUMNS = ("image_path", "image_bytes")

SCORE_INPUT = TableContract(
    name="score_input",
    schema=pa.schema([
        pa.field("id", pa.string()),
        pa.field("image_path", pa.string()),  # relative to the run's image root
        pa.field("image_bytes", pa.binary()),  # encoded image (JPEG, PNG, …); used over image_path if both
        pa.field("text", pa.string()),
        pa.field("language", pa.string()),
    ]),
    required=frozenset({"id", "text"}),
    description="Image–text pairs to score: one row per caption, translation or foil, with its image.",
    text_columns=frozenset({"text", "language"}),
)

SCORE_FIELDS = [
    pa.field("status", pa.string(), nullable=False),  # ok | rejected
    pa.field("error_message", pa.string()),
    pa.field("clip_score", pa.float64()),  # w · max(cos(image, text), 0)
    pa.field("ref_clip_score", pa.float64()),  # null when the pair has no references
    pa.field("text_truncated", pa.bool_()),  # the text was longer than the model's context
    pa.field("refs_truncated", pa.bool_()),  # some reference was; null without references
]

SCORES = TableContract(
    name="scores",
    schema=pa.schema([f for f in SCORE_INPUT.schema if f.name != "image_bytes"] + SCORE_FIELDS),
    required=frozenset({"id", "status", "clip_score"}),
    description="One row per input pair (image bytes dropped), status ok or rejected with a message; "
                "optional image_embedding / text_embedding fixed-size float16 or float32 lists.",
)


def score_input_contract(references_column: str | None) -> TableContract:
    """SCORE_INPUT, plus the references column as a required list of strings when one is named."""
    if not references_column:
        return SCORE_INPUT
    if references_column in SCORE_INPUT.schema.names:
        raise ContractError(f"--references-column {references_column!r} names a column the pairs "
                            f"table already uses for something else")
    return TableContract(
        name=SCORE_INPUT.name,
        schema=SCORE_INPUT.schema.append(pa.field(references_column, pa.list_(pa.string()))),
        required=SCORE_INPUT.required | {references_column},
        description=SCORE_INPUT.description, text_columns=SCORE_INPUT.text_columns)


def check_image_columns(columns: list[str], source: str) -> None:
    """A pairs table must say where its images are: a path column, a bytes column, or both."""
    if not set(IMAGE_COLUMNS) & set(columns):
        raise ContractError([Violation(source, "image_path", "required column is missing (or give "
                                                             "image_bytes)")])


def embedding_type(dim: int, dtype: str) -> pa.DataType:
    return pa.list_({"float16": pa.float16(), "float32": pa.float32()}[dtype], dim)
