"""The tiny models' parameter values, the same on every CPU.

torch's own initialisation draws with CPU kernels (vectorised normal_, erfinv_…) whose last bits
differ from one CPU (or ATEN_CPU_CAPABILITY) to another, so the same seed gave other weight files
on another machine. Here torch only builds the real classes; every value its init drew at random is
then replaced by one from numpy's PCG64, seeded from the seed and the tensor's name, drawn as exact
float64 uniforms (no exp, log or cos: those come from libm and may round differently) and cast once.
"""
from __future__ import annotations

import hashlib
import math


def portable_init(seed: int, name: str, build):
    """build()'s model with every parameter and buffer that its init randomised drawn from PCG64.

    Which tensors are random, and their scale, is learnt from two builds with other torch seeds: a
    tensor that differs between them was drawn; its elements that are 0 in both (padding rows) stay
    0; the rest come uniform with the root mean square the init gave them, rounded to 2 significant
    digits — far coarser than the last bits a CPU changes. Constants (ones, zeros, logit scales)
    are kept: the init wrote them exactly. `name` keeps the models' streams apart."""
    import numpy as np
    import torch

    model, other = (_seeded((seed * 2 + k) % 2**64, build) for k in (0, 1))
    theirs = dict(_tensors(other))
    with torch.no_grad():
        for tensor_name, tensor in _tensors(model):
            pair = theirs[tensor_name]
            if torch.equal(tensor, pair):
                continue
            structural = (tensor == 0) & (pair == 0)
            drawn = np.concatenate([t[~structural].double().numpy() for t in (tensor, pair)])
            scale = _two_digits(math.sqrt(float(np.mean(drawn * drawn))), tensor_name)
            rng = np.random.Generator(np.random.PCG64(_seed_words(seed, f"{name}/{tensor_name}")))
            values = (rng.random(tuple(tensor.shape)) * 2.0 - 1.0) * (scale * math.sqrt(3.0))
            tensor.copy_(torch.where(structural, tensor, torch.from_numpy(values).to(tensor.dtype)))
    return model


def _seeded(seed: int, build):
    """build() with torch's RNG at `seed`, leaving the caller's RNG state as it was."""
    import torch

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        return build()


def _tensors(model):
    """Floating-point parameters and buffers by name, each once (tied weights under their first name)."""
    seen = set()
    for tensor_name, tensor in (*model.named_parameters(), *model.named_buffers()):
        if tensor.is_floating_point() and id(tensor) not in seen:
            seen.add(id(tensor))
            yield tensor_name, tensor.data


def _two_digits(value: float, tensor_name: str) -> float:
    """value to 2 significant digits; refused where last-bit noise could round it the other way."""
    rounded = float(f"{value:.2g}")
    if {float(f"{value * (1 + side * 1e-6):.2g}") for side in (-1, 1)} != {rounded}:
        raise RuntimeError(f"tiny model tensor {tensor_name}: its scale {value!r} sits on a rounding "
                           "boundary, so another CPU could round it the other way; build with another seed")
    return rounded


def _seed_words(seed: int, key: str) -> list[int]:
    """PCG64's seed: the build seed and a digest of the tensor's key (SeedSequence is integer-only)."""
    digest = hashlib.sha256(key.encode()).digest()
    return [seed, *(int.from_bytes(digest[i:i + 4], "little") for i in range(0, 16, 4))]
