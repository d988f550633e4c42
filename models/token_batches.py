"""Length-sorted batching under a token budget, for beam search and COMETKiwi alike, so that long
inputs fit in memory.

For beam search the budget counts beam-expanded tokens: a batch of n inputs padded to length L under
B beams holds n·L·B tokens in the decoder's cache, which is what runs out first at beam 100.
"""
from __future__ import annotations

import math


def length_sorted_batches(lengths: list[int], max_tokens: int, num_beams: int = 1,
                          max_items: int | None = None) -> list[list[int]]:
    """Indices into `lengths`, grouped in batches, longest first (an OOM shows at once, not at the
    end), each at most `max_items` inputs and `max_tokens` padded tokens × beams. Every batch holds at
    least one input, whatever its length. Deterministic: ties by index."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    current: list[int] = []
    for index in order:
        padded = lengths[current[0]] if current else lengths[index]  # the first is the longest
        full = max_items is not None and len(current) >= max_items
        if current and (full or (len(current) + 1) * padded * num_beams > max_tokens):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def max_new_tokens(input_length: int, ratio: float, extra: int, ceiling: int) -> int:
    """A generation limit relative to the input: ratio × input tokens + extra, at most the ceiling."""
    return max(1, min(ceiling, math.ceil(ratio * input_length) + extra))
