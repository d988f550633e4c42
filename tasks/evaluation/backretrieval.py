"""BackRetrieval (Fain et al., SIGIR 2021): judge a cross-lingual text encoder f without parallel data.
For each source text, retrieve the nearest target text with f, then rank all source images by similarity
(image encoder g) to that text's image; Recall@K of the source text's own image. Beside it, the
ground-truth cross-lingual Recall@K (XLR) when the data is parallel and the CORR baseline."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from xmdata.schemas.contract import ContractError

from xmdata.tasks.evaluation.ranking import mean_std, nearest, recall_at_k, unit_rows

CORR_SIDE = 1_000  # CORR ranks at most 1,000 x 1,000 (source, target) distance pairs


@dataclass
class Side:
    """One language's items: a text-embedding matrix per model, and the image embeddings (rows align)."""

    texts: dict[str, np.ndarray]
    images: np.ndarray

    def __post_init__(self):
        self.texts = {m: unit_rows(t) for m, t in self.texts.items()}
        self.images = unit_rows(self.images)


def backretrieval(src_text, src_image, tgt_text, tgt_image, k: int = 10) -> float:
    """BkR Recall@K on aligned samples (unit rows). Step 2 ties (equal text similarity) go to the first
    target in sample order — a random one, since samples are drawn in random order."""
    retrieved = nearest(src_text, tgt_text)
    return float(recall_at_k(tgt_image[retrieved], src_image, np.arange(len(src_text)), k).mean())


def cross_lingual_recall(src_text, tgt_text, k: int = 10) -> float:
    """XLR: Recall@K of each source text's own translation (row i of tgt_text) among all target texts."""
    return float(recall_at_k(src_text, tgt_text, np.arange(len(src_text)), k).mean())


def corr_baseline(src_text, src_image, tgt_text, tgt_image, rng: np.random.Generator) -> float | None:
    """CORR: Spearman between text and image cosine distances over (source, target) pairs of the sample;
    above CORR_SIDE items per side, over a seeded CORR_SIDE x CORR_SIDE sub-grid of it."""
    from scipy import stats  # noqa: PLC0415 — ~1 s of import, paid where a metric runs
    s = np.sort(rng.choice(len(src_text), min(len(src_text), CORR_SIDE), replace=False))
    t = np.sort(rng.choice(len(tgt_text), min(len(tgt_text), CORR_SIDE), replace=False))
    text_dist = (1 - src_text[s] @ tgt_text[t].T).ravel()
    image_dist = (1 - src_image[s] @ tgt_image[t].T).ravel()
    if len(text_dist) < 2 or np.ptp(text_dist) == 0 or np.ptp(image_dist) == 0:
        return None
    return float(stats.spearmanr(text_dist, image_dist).statistic)


def evaluate_backretrieval(source: Side, target: Side, pairs: np.ndarray | None = None, n: int = 10_000,
                           seeds: int = 25, k: int = 10, seed: int = 0) -> dict:
    """BkR, CORR and (with `pairs`: (source row, target row) translations) XLR per model, each averaged over
    `seeds` draws of n items; all models see the same draws. With three or more models and XLR, also the
    Pearson and Spearman correlation of BkR (and CORR) with XLR across models, averaged over seeds."""
    _check_dimensions(source, target)
    n_bkr = min(n, len(source.images), len(target.images))
    if n_bkr < 2:
        raise ContractError(f"BackRetrieval needs at least two items on each side (source {len(source.images)}, "
                            f"target {len(target.images)})")
    n_xlr = min(n, len(pairs)) if pairs is not None else 0
    runs = {m: {"backretrieval": [], "corr": [], "xlr": []} for m in source.texts}
    image_recall = []
    for s in range(seeds):
        rng = np.random.default_rng([seed, s])
        src, tgt = rng.choice(len(source.images), n_bkr, replace=False), rng.choice(len(target.images), n_bkr, replace=False)
        sample = pairs[rng.choice(len(pairs), n_xlr, replace=False)] if n_xlr else None
        if sample is not None:  # what a perfect text encoder would score: the image retrieval's own recall
            image_recall.append(float(recall_at_k(target.images[sample[:, 1]], source.images[sample[:, 0]],
                                                  np.arange(n_xlr), k).mean()))
        for model in source.texts:
            fs, ft = source.texts[model], target.texts[model]
            runs[model]["backretrieval"].append(backretrieval(fs[src], source.images[src], ft[tgt], target.images[tgt], k))
            runs[model]["corr"].append(corr_baseline(fs[src], source.images[src], ft[tgt], target.images[tgt],
                                                     np.random.default_rng([seed, s, 1])))  # same grid per model
            if sample is not None:
                runs[model]["xlr"].append(cross_lingual_recall(fs[sample[:, 0]], ft[sample[:, 1]], k))
    models = {m: {"backretrieval": mean_std(r["backretrieval"]), "corr": _summary(r["corr"]),
                  "xlr": mean_std(r["xlr"]) if r["xlr"] else None} for m, r in runs.items()}
    return {"k": k, "n": n_bkr, "n_xlr": n_xlr or None, "seeds": seeds, "seed": seed,
            "random_expectation": min(1.0, k / n_bkr),
            "image_recall": mean_std(image_recall) if image_recall else None, "models": models,
            "agreement_with_xlr": agreement(runs) if n_xlr else {"reason": "no parallel pairs: XLR unknown"}}


def _check_dimensions(source: Side, target: Side) -> None:
    """Source and target must come from the same encoders: same widths, model by model."""
    widths = {"image": (source.images.shape[1], target.images.shape[1])}
    widths.update({m: (source.texts[m].shape[1], target.texts[m].shape[1]) for m in source.texts})
    wrong = {k: v for k, v in widths.items() if v[0] != v[1]}
    if wrong:
        raise ContractError("source and target embeddings differ in width: " + ", ".join(
            f"{k} {a} vs {b}" for k, (a, b) in wrong.items()))


def _summary(values: list) -> dict:
    if None in values:
        return {"mean": None, "std": None, "per_seed": values, "reason": "constant distances on some seed"}
    return mean_std(values)


def agreement(runs: dict) -> dict:
    """Per seed, Pearson and Spearman across models of XLR against BkR and against CORR; mean over seeds."""
    from scipy import stats  # noqa: PLC0415 — ~1 s of import, paid where a metric runs
    if len(runs) < 3:
        return {"reason": f"needs at least three models (got {len(runs)}; two give ±1 by construction)"}
    out = {}
    for metric in ("backretrieval", "corr"):
        for name, fn in (("pearson", stats.pearsonr), ("spearman", stats.spearmanr)):
            values = []
            for s in range(len(next(iter(runs.values()))["xlr"])):
                x = np.asarray([r["xlr"][s] for r in runs.values()])
                y = [r[metric][s] for r in runs.values()]
                if None not in y and np.ptp(x) > 0 and np.ptp(y) > 0:
                    values.append(float(fn(x, np.asarray(y)).statistic))
            out[f"{metric}_{name}"] = {**mean_std(values), "seeds_defined": len(values),
                                       "reason": None if values else "XLR or the metric is constant across models"}
    return out
