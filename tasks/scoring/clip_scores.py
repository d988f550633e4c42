"""CLIPScore and RefCLIPScore from embeddings (Hessel et al., 2021), in plain numpy.

CLIP-S(c, v)       = w · max(cos(c, v), 0)                 w: ScoringParams.weight (the paper's 2.5)
RefCLIP-S(c, R, v) = H-Mean(CLIP-S(c, v), max(max_{r∈R} cos(c, r), 0))

The reference term is *not* multiplied by w: that is the paper's Eq. and its reference code
(jmhessel/clipscore: `2·per_instance_image_text·per_instance_text_text / (sum)` with the
text–text term a plain cosine), and the formulation the multilingual CLIPScore work adopted
unchanged (Appendix A). So CLIP-S lies in [0, w] and the reference term in [0, 1]. The paper
clamps the reference term at 0 where the reference code does not; we clamp, as the paper says
(the two differ only when every reference has a negative cosine). H-Mean(0, 0) is 0.
Everything is computed in float64 on re-normalised embeddings, so that a row's score depends on
its own embeddings only.
"""
from __future__ import annotations

import numpy as np


def normalised(embeddings: np.ndarray) -> np.ndarray:
    rows = np.asarray(embeddings, dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def cosine_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """cos(a[i], b[i]) for every row i."""
    return np.einsum("ij,ij->i", normalised(a), normalised(b))


def clip_score(image_emb: np.ndarray, text_emb: np.ndarray, weight: float) -> np.ndarray:
    """w · max(cos(image, text), 0), one per row."""
    return weight * np.maximum(cosine_rows(image_emb, text_emb), 0.0)


def best_reference_similarity(text_emb: np.ndarray, ref_emb: np.ndarray, ref_owner: np.ndarray) -> np.ndarray:
    """max(max over the row's references of cos(text, reference), 0); NaN for rows without any.

    ref_emb holds every reference of every row, ref_owner[j] the row reference j belongs to.
    """
    best = np.full(len(text_emb), -np.inf)
    if len(ref_owner):
        sims = cosine_rows(np.asarray(text_emb)[ref_owner], ref_emb)
        np.maximum.at(best, ref_owner, sims)
    return np.where(np.isneginf(best), np.nan, np.maximum(best, 0.0))


def harmonic_mean(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    total = a + b
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(total > 0, 2.0 * a * b / np.where(total > 0, total, 1.0), 0.0 * total)


def ref_clip_score(clip_scores: np.ndarray, text_emb: np.ndarray, ref_emb: np.ndarray,
                   ref_owner: np.ndarray) -> np.ndarray:
    """H-Mean(CLIP-S, best reference similarity) per row; NaN for rows without references."""
    return harmonic_mean(np.asarray(clip_scores, dtype=np.float64),
                         best_reference_similarity(text_emb, ref_emb, ref_owner))
