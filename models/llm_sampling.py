"""Sampling whose every sample is its unit's own, whatever its batch mates, shard or place in a batch.

transformers samples with `torch.multinomial` on the process's global generator (generation/utils.py,
4.57): a row's draw then depends on every row drawn before it. Here a sample is greedy argmax over
the warped logits plus Gumbel noise (the Gumbel-max trick: argmax(l + G), G = -log(-log U), draws a
token with probability softmax(l)), and the noise of sample j of a unit comes from its own
torch.Generator, seeded from sha256(unit key, j) — the unit's memo key (runtime/memo.UnitMemo.key of
its (text, source, target)). The noise is drawn on the CPU in float64 (the same numbers on any
device), one vocabulary-sized draw a step, for finished rows too, so a row's t-th draw never depends
on when its batch mates stop. What is left of the batch, the logits' last bits, is what beam search
has too, and is bounded the same way (one length and one size a batch: models/token_batches.py).
"""
from __future__ import annotations

import hashlib

import torch
from transformers import (EpsilonLogitsWarper, LogitsProcessor, LogitsProcessorList, TemperatureLogitsWarper,
                          TopPLogitsWarper)

SEED_BITS = 63  # torch.Generator.manual_seed takes a 64-bit value; 63 bits stay clear of its sign handling


def sample_seed(unit_key: str, index: int) -> int:
    digest = hashlib.sha256(f"{unit_key}\0{index}".encode()).digest()
    return int.from_bytes(digest[:8], "little") & ((1 << SEED_BITS) - 1)


class GumbelNoise(LogitsProcessor):
    """Adds each row's own Gumbel noise to its (warped) scores; greedy argmax then samples."""

    def __init__(self, seeds: list[int]):
        self.generators = [torch.Generator(device="cpu").manual_seed(seed) for seed in seeds]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        if scores.shape[0] != len(self.generators):
            raise ValueError(f"{scores.shape[0]} rows for {len(self.generators)} sample generators")
        vocab = scores.shape[-1]
        uniform = torch.stack([torch.rand(vocab, generator=g, dtype=torch.float64) for g in self.generators])
        gumbel = -torch.log(-torch.log(uniform))  # U = 0 gives -inf: that token is never drawn
        return scores + gumbel.to(device=scores.device, dtype=scores.dtype)


def warper(sampler: dict) -> LogitsProcessor:
    """The rule's transformers warper (its public class), as do_sample=True would have applied it."""
    rule, value = sampler["sampling"], sampler["value"]
    if rule == "epsilon":
        return EpsilonLogitsWarper(epsilon=value)
    if rule == "top_p":
        return TopPLogitsWarper(top_p=value)
    if rule == "temperature":
        return TemperatureLogitsWarper(value)
    raise ValueError(f"unknown sampling rule {rule!r}")


def sampling_processors(sampler: dict, unit_keys: list[str], per_unit: int) -> LogitsProcessorList:
    """The warper, then the noise: rows are unit 0's samples 0..per_unit-1, then unit 1's, …"""
    seeds = [sample_seed(key, j) for key in unit_keys for j in range(per_unit)]
    return LogitsProcessorList([warper(sampler), GumbelNoise(seeds)])
