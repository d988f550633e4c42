"""Batches for beam search and COMETKiwi alike: under a token budget, so that long inputs fit in
memory, and of one fixed shape per input length, so that an input's result does not depend on the
inputs beside it (which depend on the shard plan).

Both halves are needed, measured on the tiny models (tests/models/test_batch_independence.py, with
torch's default and with other CPU kernels): padding to a batch-mate's length changes an input's
numbers, and so does the number of inputs in the call, enough to flip an untrained model's beams.
So a batch holds inputs of one length only (nothing padded) and every call for that length holds
`batch_capacity` inputs: a shorter batch is filled with copies of its last input, whose results are
dropped (`oom_backoff.run_with_backoff(fill_to=...)`). What that costs is at most one partly filled
call per input length and shard.

For beam search the budget counts beam-expanded tokens: a batch of n inputs of length L under B
beams holds n·L·B tokens in the decoder's cache, which is what runs out first at beam 100.
"""
from __future__ import annotations

import itertools
import math


def batch_capacity(length: int, max_tokens: int, num_beams: int = 1, max_items: int | None = None) -> int:
    """How many inputs of `length` tokens one call holds: `max_tokens` tokens × beams and at most
    `max_items`, at least one whatever its length."""
    size = max(1, max_tokens // max(1, length * num_beams))
    return size if max_items is None else max(1, min(size, max_items))


def length_sorted_batches(lengths: list[int], max_tokens: int, num_beams: int = 1,
                          max_items: int | None = None) -> list[list[int]]:
    """Indices into `lengths`, grouped in batches of one length each, longest first (an OOM shows
    at once, not at the end), each of at most `batch_capacity` inputs. Deterministic: ties by index."""
    order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
    batches: list[list[int]] = []
    for length, same in itertools.groupby(order, key=lambda i: lengths[i]):
        same = list(same)
        size = batch_capacity(length, max_tokens, num_beams, max_items)
        batches += [same[start:start + size] for start in range(0, len(same), size)]
    return batches


def filled(items: list, size: int) -> list:
    """`items` and copies of its last item up to `size` (their results are dropped)."""
    return list(items) + [items[-1]] * max(0, size - len(items))


def max_new_tokens(input_length: int, ratio: float, extra: int, ceiling: int) -> int:
    """A generation limit relative to the input: ratio × input tokens + extra, at most the ceiling."""
    return max(1, min(ceiling, math.ceil(ratio * input_length) + extra))
