"""CIDEr per system and language (Crossmodal-3600 Section 3), with pycocoevalcap's reference CIDEr-D
(n = 4, sigma = 6, idf over the evaluated images' references) fed by the script-aware tokeniser, and
how ΔCIDEr between two systems agrees with side-by-side human gains (Table 6)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from xmdata.schemas.contract import ContractError
from xmdata.schemas.evaluation import labels, numbers, require_columns, require_subset, require_unique

from xmdata.tasks.evaluation.tokenize import tokenize


def corpus_cider(candidates: dict[str, str], references: dict[str, list[str]]) -> float | None:
    """CIDEr-D x 100 (as the paper reports it) of one candidate per image against its references."""
    from pycocoevalcap.cider.cider import Cider  # pure Python; the package's Java tools are not used

    if len(candidates) < 2:
        return None  # idf = log(#images) - log(df) is 0 for every n-gram with a single image
    res = {k: [" ".join(tokenize(candidates[k]))] for k in sorted(candidates)}
    gts = {k: [" ".join(tokenize(r)) for r in references[k]] for k in sorted(candidates)}
    if not any(g.strip() for refs in gts.values() for g in refs):
        return None
    score, _ = Cider().compute_score(gts, res)
    return 100.0 * float(score)


def cider_scores(candidates: pa.Table, references: pa.Table, text: str = "text", image: str = "image_id",
                 system: str = "system", language: str = "language", source: str = "candidates",
                 references_source: str = "references", id_column: str = "id") -> dict:
    """CIDEr of every system in every language over the images it captioned; every such image must have
    references in that language (else ContractError naming the missing ones)."""
    require_columns(candidates, {text: "text", image: "label", system: "label", language: "label"}, source)
    require_columns(references, {text: "text", image: "label", language: "label"}, references_source)
    require_unique(candidates, [system, language, image], source, id_column)
    refs: dict[tuple[str, str], list[str]] = {}
    for lang, img, t in zip(*(labels(references, c, references_source, id_column) for c in (language, image, text))):
        refs.setdefault((str(lang), str(img)), []).append(t)
    rows = list(zip(*(labels(candidates, c, source, id_column) for c in (system, language, image, text))))
    require_subset({f"{lang}/{img}" for _, lang, img, _ in rows}, {f"{lang}/{img}" for lang, img in refs},
                   "language/image", source, references_source)
    groups: dict[tuple[str, str], dict[str, str]] = {}
    for sys_name, lang, img, t in rows:
        groups.setdefault((str(sys_name), str(lang)), {})[str(img)] = t
    per_system: dict[str, dict] = {}
    for (sys_name, lang), chosen in sorted(groups.items()):
        score = corpus_cider(chosen, {k: refs[(lang, k)] for k in chosen})
        per_system.setdefault(sys_name, {})[lang] = {
            "cider": score, "images": len(chosen),
            "reason": None if score is not None else "fewer than two images, or no reference words"}
    return {"per_system": per_system}


def gain_correlation(delta: np.ndarray, gain: np.ndarray) -> dict:
    """Pearson, Spearman, Kendall τ-b of ΔCIDEr with the side-by-side gain, and Matthews' coefficient of
    their signs (positive: model 2 better, > 0). The paper's Table 5 rows give its Table 6 with these."""
    from scipy import stats  # noqa: PLC0415 — ~1 s of import, paid where a metric runs
    if len(delta) != len(gain):
        raise ContractError(f"ΔCIDEr and gains differ in length ({len(delta)} vs {len(gain)})")
    out = {"n": int(len(delta)), "reason": None, "pearson": None, "spearman": None, "kendall_tau_b": None,
           "matthews": None}
    if len(delta) < 2 or np.ptp(delta) == 0 or np.ptp(gain) == 0:
        out["reason"] = "fewer than two comparisons" if len(delta) < 2 else "constant ΔCIDEr or gain"
        return out
    out["pearson"] = float(stats.pearsonr(delta, gain).statistic)
    out["spearman"] = float(stats.spearmanr(delta, gain).statistic)
    out["kendall_tau_b"] = float(stats.kendalltau(delta, gain, variant="b").statistic)
    d, g = delta > 0, gain > 0
    tp, tn, fp, fn = (int(np.sum(m)) for m in (d & g, ~d & ~g, d & ~g, ~d & g))
    denominator = float(tp + fp) * (tp + fn) * (tn + fp) * (tn + fn)
    if denominator == 0:
        out["matthews_reason"] = "one side's sign never changes"
    else:
        out["matthews"] = (tp * tn - fp * fn) / np.sqrt(denominator)
    return out


def sxs_deltas(sxs: pa.Table, per_system: dict, model2: str = "model2", model1: str = "model1",
               language: str = "language", gain: str = "sxs_gain", source: str = "sxs",
               id_column: str = "id") -> tuple[np.ndarray, np.ndarray, list[dict]]:
    """ΔCIDEr = CIDEr(model 2) - CIDEr(model 1) in the row's language, beside the row's human gain."""
    require_columns(sxs, {model2: "label", model1: "label", language: "label", gain: "numeric"}, source)
    gains = numbers(sxs, gain, source, id_column)
    rows = list(zip(*(labels(sxs, c, source, id_column) for c in (model2, model1, language))))
    needed = {f"{m}/{lang}" for m2, m1, lang in rows for m in (m2, m1)}
    have = {f"{s}/{lang}" for s, langs in per_system.items() for lang, v in langs.items() if v["cider"] is not None}
    require_subset(needed, have, "system/language", source, "the CIDEr scores")
    deltas = np.asarray([per_system[str(m2)][str(lang)]["cider"] - per_system[str(m1)][str(lang)]["cider"]
                         for m2, m1, lang in rows])
    table = [{"model2": str(m2), "model1": str(m1), "language": str(lang), "sxs_gain": float(gv),
              "delta_cider": float(dv)} for (m2, m1, lang), gv, dv in zip(rows, gains, deltas)]
    return deltas, gains, table
