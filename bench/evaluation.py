"""The heavy evaluation metrics on CPU at N = 10,000: BackRetrieval (one seed: the 25-seed default costs
25 times this), XLR, CORR, and MMMEB P@1 with 1 + 999 candidates per query and McNemar. Synthetic
512-dimensional embeddings (CLIP ViT-B/32 width): latent meanings plus noise.

    .venv/bin/python -m bench evaluation
"""
from __future__ import annotations

import time

import numpy as np

N, DIM = 10_000, 512


def timed(label: str, fn, *args, **kwargs):
    started = time.perf_counter()
    result = fn(*args, **kwargs)
    print(f"{label:<58} {time.perf_counter() - started:7.2f} s", flush=True)
    return result


def main() -> dict:
    from xmdata.tasks.evaluation.backretrieval import Side, backretrieval, corr_baseline, cross_lingual_recall, \
        evaluate_backretrieval
    from xmdata.tasks.evaluation.ranking import unit_rows
    from xmdata.tasks.evaluation.retrieval import mcnemar, retrieval_hits

    rng = np.random.default_rng(0)
    z = rng.normal(size=(N, DIM)).astype(np.float32)
    noisy = lambda scale: z + scale * rng.normal(size=z.shape).astype(np.float32)  # noqa: E731
    fs, ft, gs, gt = (unit_rows(noisy(s)) for s in (2.3, 2.3, 3.0, 3.0))  # noise levels: mid-range recalls
    bkr = timed(f"BackRetrieval R@10, N = {N:,}, one seed", backretrieval, fs, gs, ft, gt, 10)
    xlr = timed(f"XLR R@10, N = {N:,}", cross_lingual_recall, fs, ft, 10)
    corr = timed("CORR, 1,000 x 1,000 distance pairs", corr_baseline, fs, gs, ft, gt, np.random.default_rng(0))
    timed("evaluate_backretrieval: 1 seed (+ image recall)", evaluate_backretrieval,
          Side({"f": fs}, gs), Side({"f": ft}, gt), np.column_stack([np.arange(N)] * 2), N, 1)
    hits_a, pool = timed(f"MMMEB P@1, N = {N:,}, pool 1 + 999", retrieval_hits, noisy(6.5), z, np.arange(N), 999,
                         np.random.default_rng(1))
    hits_b, _ = retrieval_hits(noisy(7.0), z, np.arange(N), 999, np.random.default_rng(1))
    test = timed("McNemar on the two systems' hits", mcnemar, hits_a, hits_b)
    print(f"  BkR {bkr:.4f}  XLR {xlr:.4f}  CORR {corr:.3f}  P@1 {hits_a.mean():.4f} vs {hits_b.mean():.4f} "
          f"(pool {pool}, McNemar {test['method']} p = {test['p_value']:.2g})")
    return {"backretrieval": bkr, "xlr": xlr, "corr": corr, "p_at_1": float(hits_a.mean())}


if __name__ == "__main__":
    main()
