"""What two translation engines, or one engine on two devices, are held to: the same best candidate
for at least AGREEMENT of the inputs. Exact equality is asked only of one engine against itself: a
tie between two beams breaks the other way under other math kernels (another CPU, CUDA), so an exact
comparison across engines fails on a machine it was not written on."""
from __future__ import annotations

from typing import Sequence

AGREEMENT = 0.95  # tests/translation/test_translate_engines.py's figure, float32 on the tiny models


def agreement(ours: Sequence, theirs: Sequence) -> float:
    """The share of positions where the two agree; the two must be as long, and not empty."""
    assert len(ours) == len(theirs) and len(ours) > 0, (len(ours), len(theirs))
    return sum(a == b for a, b in zip(ours, theirs)) / len(ours)
