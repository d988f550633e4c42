"""Score stages over candidates: fastText language ID on every candidate, then COMETKiwi on those
whose label the target accepts. Columns are added, nothing is removed (score first, select second).

The LID probability threshold is left to selection: QE scores every candidate with a matching
label, so `select-translations --min-lid-prob` can be re-tuned in either direction without a model.
"""
from __future__ import annotations

import math

import pyarrow as pa

from xmdata.models.base import ModelSpec
from xmdata.models.oom_backoff import OUT_OF_MEMORY, BatchSizes
from xmdata.models.registry import get_model
from xmdata.runtime.memo import served_and_computed
from xmdata.runtime.params import Params
from xmdata.runtime.placement import needs_gpu
from xmdata.runtime.stage import Stage
from xmdata.schemas.languages import label_code

from .language_id import LIGHT_ROWS
from xmdata.tasks.build.rejects import concat_rejects, make_rejects, no_rejects
from xmdata.tasks.build.unit_memo import memo_for

LID_STAGE, QE_STAGE = "candidate_lid", "candidate_qe"
MEMO_KIND = "cometkiwi"
MEMO_CHUNK = 2048  # pairs scored, then stored, at a time: what a kill can lose
# The checkpoint's path is not what decides a score: its content is (tasks/build/unit_memo.py).
QE_MEMO_EXCLUDE = ("model.name_or_path",)
QE_NOT_FINITE = "qe_not_finite"


def _scatter(size: int, positions: list[int], values: list, dtype: pa.DataType) -> pa.Array:
    """A column of `size` nulls with `values` at `positions`."""
    out = [None] * size
    for position, value in zip(positions, values):
        out[position] = value
    return pa.array(out, dtype)


class CandidateLidShard(Params):
    model: ModelSpec
    accepted_labels: dict[str, list[str]]  # target -> lid.176 labels that count as that language


class CandidateQeShard(Params):
    model: ModelSpec


def identify_candidate_language(table: pa.Table, params: CandidateLidShard) -> tuple[pa.Table, pa.Table]:
    model = get_model("language_identifier", params.model)
    # Plain lists, not pyarrow.compute: indices_nonzero crashes on a column with no chunks (empty shard).
    positions = [i for i, status in enumerate(table.column("status").to_pylist()) if status == "ok"]
    candidates, targets = table.column("candidate").to_pylist(), table.column("target_language").to_pylist()
    labels, probs = model.predict(model.prepare([candidates[i] for i in positions])) if positions else ([], [])
    targets = [targets[i] for i in positions]
    accepted = params.accepted_labels
    matches = [label in accepted.get(target, ()) for label, target in zip(labels, targets)]
    n = table.num_rows
    table = table.set_column(table.schema.get_field_index("lid_label"), "lid_label",
                             _scatter(n, positions, [label_code(label) for label in labels], pa.string()))
    table = table.set_column(table.schema.get_field_index("lid_label_raw"), "lid_label_raw",
                             _scatter(n, positions, labels, pa.string()))
    table = table.set_column(table.schema.get_field_index("lid_prob"), "lid_prob",
                             _scatter(n, positions, probs, pa.float32()))
    table = table.set_column(table.schema.get_field_index("lid_match"), "lid_match",
                             _scatter(n, positions, matches, pa.bool_()))
    return table, no_rejects()


def estimate_candidate_quality(table: pa.Table, params: CandidateQeShard) -> tuple[pa.Table, pa.Table]:
    positions = [i for i, match in enumerate(table.column("lid_match").to_pylist()) if match]
    scores: list[float | None] = []
    candidates = table.column("candidate").to_pylist()
    if positions:
        sources = table.column("source_text").to_pylist()
        pairs = [[sources[i], candidates[i]] for i in positions]

        def compute(wanted: list[int]) -> tuple[list[float | None], bool]:  # the model loads only for these
            model = get_model("quality_estimator", params.model)
            sizes = BatchSizes()  # a batch that ran out of memory was halved: its numbers may move
            found = model.predict(model.prepare([pairs[i][0] for i in wanted], [pairs[i][1] for i in wanted]), sizes)
            return found, not sizes.out_of_memory

        scores = served_and_computed(memo_for(MEMO_KIND, params.model), pairs, compute, MEMO_CHUNK,
                                     storable=lambda score: score is not None)
    # A pair that ran out of memory even alone, or whose score is not a number (NaN, inf: a fault of
    # the model, not a judgement to rank), keeps a null score and is listed with its reason.
    ids, refused = table.column("id").to_pylist(), {OUT_OF_MEMORY: [], QE_NOT_FINITE: []}
    for position, score in zip(positions, scores):
        if score is None or not math.isfinite(score):
            refused[OUT_OF_MEMORY if score is None else QE_NOT_FINITE].append(position)
    scores = [None if score is None or not math.isfinite(score) else score for score in scores]
    column = _scatter(table.num_rows, positions, scores, pa.float32())
    rejects = concat_rejects([make_rejects(QE_STAGE, reason, [ids[i] for i in failed], [candidates[i] for i in failed])
                              for reason, failed in refused.items() if failed])
    return table.set_column(table.schema.get_field_index("qe_score"), "qe_score", column), rejects


def candidate_lid_stage(model: ModelSpec, accepted_labels: dict[str, list[str]], name: str = LID_STAGE) -> Stage:
    """`name`: QA translation runs the same stage on its candidates as qa_candidate_lid."""
    return Stage(name, version="2", fn=identify_candidate_language,  # 2: lid_label in the project's codes
                 params=CandidateLidShard(model=model, accepted_labels=accepted_labels), inline_rows=LIGHT_ROWS)


def candidate_qe_stage(model: ModelSpec, name: str = QE_STAGE) -> Stage:
    # 3: batches of pairs of one length (a score no longer moves with its batch-mates); 4: NaN refused
    return Stage(name, version="4", fn=estimate_candidate_quality, params=CandidateQeShard(model=model),
                 gpu=needs_gpu(model.device), memo_exclude=QE_MEMO_EXCLUDE,
                 memo_kinds=(MEMO_KIND,), memo_gather=True)
