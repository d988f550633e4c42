"""Tables of the translation build: every candidate with its scores, then the chosen translation.

A unit is one text to translate: (id, column, element, segment). `element` is the position in a
list column (null for a plain text column); `segment` the sentence number when long texts are split.
"""
from __future__ import annotations

import pyarrow as pa

from .contract import TableContract

UNIT_FIELDS = [
    pa.field("id", pa.string()), pa.field("column", pa.string()), pa.field("element", pa.int32()),
    pa.field("segment", pa.int32()), pa.field("source_text", pa.string()),
    pa.field("target_language", pa.string()),
]

CANDIDATES = TableContract(
    name="candidates",
    schema=pa.schema(UNIT_FIELDS + [
        pa.field("status", pa.string()),  # "ok", or why the unit has no candidates (empty_text, too_long)
        pa.field("candidate", pa.string()), pa.field("beam_rank", pa.int32()),
        pa.field("sequence_score", pa.float32()),  # length-normalised log-probability of the beam
        pa.field("lid_label", pa.string()), pa.field("lid_prob", pa.float32()),
        pa.field("lid_label_raw", pa.string()),  # the model's own label; lid_label is the project's code
        pa.field("lid_match", pa.bool_()),  # the model's label is one the target language accepts
        pa.field("qe_score", pa.float32()),  # COMETKiwi; null where the label did not match
    ]),
    required=frozenset({"id", "column", "target_language", "status", "candidate"}),
    description="Every translation candidate: beam rank, sequence score, language ID and QE.",
)

# candidates.parquet: the scored shards of every engine, with the engine that wrote each candidate
# (backend:model, tasks/translation/options.py engine_label). Added where the file is written
# (tasks/translation/outputs.py write_candidates), not in the stage's shards: shards built before it
# stay valid. After the unit's fields, so the release's sort by values orders by it before the rank.
ENGINE_FIELD = pa.field("engine", pa.string())
TRANSLATION_CANDIDATES = TableContract(
    name="translation_candidates",
    schema=pa.schema(UNIT_FIELDS + [ENGINE_FIELD] + [f for f in CANDIDATES.schema if f.name not in
                                                     {u.name for u in UNIT_FIELDS}]),
    required=CANDIDATES.required | {"engine"},
    description="Every translation candidate of every engine: beam rank, sequence score, language ID and QE.",
)

TRANSLATIONS = TableContract(
    name="translations",
    schema=pa.schema([f for f in UNIT_FIELDS if f.name != "segment"] + [
        pa.field("text", pa.string()), pa.field("beam_rank", pa.int32()),
        pa.field("sequence_score", pa.float32()), pa.field("lid_label", pa.string()),
        pa.field("lid_prob", pa.float32()), pa.field("qe_score", pa.float32()),
        pa.field("candidates", pa.int32()),  # distinct candidates the beams gave
        pa.field("lid_passed", pa.int32()),  # of which passed language ID
        pa.field("qe_quartile", pa.int8()),  # 1 (lowest QE) .. 4 among kept rows of the target
        pa.field("status", pa.string()), pa.field("reason", pa.string()),
    ]),
    required=frozenset({"id", "column", "target_language", "status"}),
    description="One row per id x column x element x target: the chosen text, or status=rejected "
                "with a reason (empty_text, too_long, no_candidate_in_target_language, below_min_qe).",
)

QA_INPUT = TableContract(
    name="qa_input",
    schema=pa.schema([
        pa.field("id", pa.string()), pa.field("task", pa.string()), pa.field("query", pa.string()),
        pa.field("positive", pa.string()), pa.field("negative", pa.string()),  # negative: optional
        pa.field("image", pa.string()),  # the instance's image reference, passed through
    ]),
    required=frozenset({"id", "task", "query", "positive"}),
    description="MMEB-style instances to translate (MMEB names qry/pos_text/neg_text/subset accepted).",
    text_columns=frozenset({"query", "positive", "negative"}),
)

QA_PART_FIELDS = [
    pa.field("id", pa.string()), pa.field("task", pa.string()), pa.field("part", pa.string()),  # query|positive
    pa.field("source_text", pa.string()), pa.field("target_language", pa.string()),
    pa.field("image", pa.string()),
    pa.field("flattened_newlines", pa.int32()),  # inner newlines of the source part, spaces in the target
]

QA_CANDIDATES = TableContract(
    name="qa_candidates",
    schema=pa.schema(QA_PART_FIELDS + [
        pa.field("status", pa.string()),  # "ok", or why this candidate's parts were not recovered
        pa.field("candidate", pa.string()),  # the extracted, restored part
        pa.field("beam_rank", pa.int32()), pa.field("sequence_score", pa.float32()),
        pa.field("output", pa.string()),  # the model's whole packed output
        pa.field("lid_label", pa.string()), pa.field("lid_prob", pa.float32()),
        pa.field("lid_label_raw", pa.string()),  # the model's own label
        pa.field("lid_match", pa.bool_()), pa.field("qe_score", pa.float32()),
    ]),
    required=frozenset({"id", "task", "part", "target_language", "status"}),
    description="QA translation candidates: one row per instance x target x candidate x part (query, positive).",
)

# qa_candidates.parquet: every engine's candidate shards with the engine that wrote each, added where
# the file is written (flows/translate_qa.py, as translate's candidates.parquet), not in the shards.
QA_ENGINE_CANDIDATES = TableContract(
    name="qa_engine_candidates",
    schema=pa.schema(QA_PART_FIELDS + [ENGINE_FIELD] + list(QA_CANDIDATES.schema)[len(QA_PART_FIELDS):]),
    required=QA_CANDIDATES.required | {"engine"},
    description="QA translation candidates of every engine: one row per instance x target x engine x candidate "
                "x part.",
)

QA_PARALLEL = TableContract(
    name="qa_parallel",
    schema=pa.schema([
        pa.field("id", pa.string()), pa.field("task", pa.string()), pa.field("part", pa.string()),
        pa.field("source_language", pa.string()), pa.field("target_language", pa.string()),
        pa.field("source_text", pa.string()), pa.field("target_text", pa.string()),
        pa.field("image", pa.string()), pa.field("flattened_newlines", pa.int32()),
        pa.field("beam_rank", pa.int32()), pa.field("lid_label", pa.string()),
        pa.field("lid_prob", pa.float32()), pa.field("qe_score", pa.float32()),  # null unless scored
    ]),
    required=frozenset({"id", "task", "part", "source_language", "target_language", "source_text",
                        "target_text"}),
    description="Parallel corpus of the QA translation: query and positive as independent pairs.",
)

QA_COUNTS = TableContract(
    name="qa_counts",
    schema=pa.schema([pa.field("task", pa.string()), pa.field("target_language", pa.string()),
                      pa.field("outcome", pa.string()),  # "kept" or a reject reason
                      pa.field("instances", pa.int64())]),
    required=frozenset({"task", "target_language", "outcome", "instances"}), id_column="task",
    description="Instances per task x target language x outcome (kept, or the reason rejected).",
)
