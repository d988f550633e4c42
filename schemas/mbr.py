"""Tables of MBR selection (tasks/translation/mbr*.py): every (candidate, pseudo-reference) utility of
a unit, and, when a selection used them, each unit's winner, runner-up and QE's own choice."""
from __future__ import annotations

import pyarrow as pa

from .contract import TableContract
from .translation import UNIT_FIELDS

CANDIDATE_KEY = [pa.field("engine", pa.string()), pa.field("beam_rank", pa.int32())]

MBR_UTILITIES = TableContract(
    name="mbr_utilities",
    schema=pa.schema(UNIT_FIELDS + CANDIDATE_KEY + [
        pa.field("ref_engine", pa.string()), pa.field("ref_beam_rank", pa.int32()),
        pa.field("utility", pa.float32()),  # the metric of the candidate against the pseudo-reference
    ]),
    required=frozenset({"id", "column", "target_language", "engine", "beam_rank", "ref_engine", "ref_beam_rank"}),
    description="Per unit, every ordered pair of its language-ID-passing candidates (candidate, pseudo-reference; "
                "no self-pairs) and the MBR metric's utility (chrF 0-100, or COMET).",
)

MBR_DECISIONS = TableContract(
    name="mbr_decisions",
    schema=pa.schema(UNIT_FIELDS + CANDIDATE_KEY + [
        pa.field("expected_utility", pa.float32()),  # mean utility over the pseudo-references; null: one candidate
        pa.field("pseudo_references", pa.int32()),
        pa.field("runner_up_engine", pa.string()), pa.field("runner_up_beam_rank", pa.int32()),
        pa.field("runner_up_utility", pa.float32()),
        pa.field("qe_engine", pa.string()), pa.field("qe_beam_rank", pa.int32()),  # what QE reranking chose
    ]),
    required=frozenset({"id", "column", "target_language"}),
    description="Per unit an MBR selection chose for: the winner's expected utility, the runner-up's, and the "
                "candidate QE reranking would have chosen.",
)
