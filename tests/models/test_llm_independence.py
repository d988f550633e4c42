"""An llm translator's candidates, beams and per-unit samples alike, do not depend on their batch mates
(issue 65): the same texts alone, in batches of 2 and 4, and under two other shard plans, through the
stage's own batching code (support/llm_independence.py), as test_batch_independence.py proves it for
the seq2seq translators. Texts exact; sequence scores within the decision tolerance, on this
machine's kernels and under other CPU kernels (OTHER_KERNELS). The control fails the same check:
transformers' own sampling gives a unit other samples beside batch mates."""
import json
import os
import subprocess

import pytest
from support.demo_release import BIN, OTHER_KERNELS
from support.llm_independence import differences

from xmdata.tasks.decisions import DECISION_TOLERANCE

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _check(found: dict) -> None:
    for mode in ("beam", "sampled"):
        assert set(found[mode]["texts_changed"].values()) == {0}, found
        assert found[mode]["score_drift"] < DECISION_TOLERANCE / 10, found
    assert found["sampled"]["distinct_texts"] > found["sampled"]["candidates"] // 2, found  # samples, not copies
    assert found["control_stock_sampling_changed"] > 0, found


@pytest.mark.slow  # ~40 s on two busy cores: a model load, each mode under four plans
def test_llm_candidates_do_not_depend_on_their_batch_mates(tiny_models):
    _check(differences())


@pytest.mark.slow  # its own process (kernels are chosen when torch loads)
def test_llm_candidates_do_not_depend_on_their_batch_mates_under_other_cpu_kernels(tiny_models):
    done = subprocess.run([os.path.join(BIN, "python"), "-m", "support.llm_independence"], cwd=TESTS,
                          env={**os.environ, **OTHER_KERNELS}, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    _check(json.loads(done.stdout.strip().splitlines()[-1]))
