"""Figures people would rather look at than read: the cross-language Pearson heatmap (all items; bottom
vs top QE quartile), correlations by QE quartile per language, and XLR against BackRetrieval per model."""
from __future__ import annotations

import numpy as np

from xmdata.runtime.figures import pyplot, save_png


def _cells(ax, grid: np.ndarray, codes: list[str], title: str, plt, vmin: float) -> None:
    image = ax.imshow(np.ma.masked_invalid(grid), vmin=vmin, vmax=1.0, cmap="viridis")
    ax.set(xticks=range(len(codes)), yticks=range(len(codes)), title=title)
    ax.set_xticklabels(codes, rotation=90, fontsize=8)
    ax.set_yticklabels(codes, fontsize=8)
    if len(codes) <= 12:
        for (i, j), v in np.ndenumerate(grid):
            if np.isfinite(v):
                ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                        color="white" if v < (vmin + 1) / 2 else "black")
    plt.colorbar(image, ax=ax, fraction=0.046)


def draw_cross_language(matrix: dict):
    """A writer(path) for the heatmap: all items; and, with QE, bottom quartile below the diagonal and
    top quartile above it (as the multilingual CLIPScore paper's Figure 1)."""
    def grid(subset: str) -> np.ndarray:
        return np.asarray([[np.nan if v is None else v for v in row] for row in matrix[subset]["pearson"]], float)

    def draw(path: str) -> None:
        with pyplot() as plt:
            codes = matrix["languages"]
            quartiles = "bottom_quartile" in matrix
            fig, axes = plt.subplots(1, 2 if quartiles else 1, figsize=(12 if quartiles else 6.5, 5.5), dpi=100,
                                     squeeze=False)
            panels = [(grid("all"), f"Pearson between languages, {matrix['items']} items")]
            if quartiles:
                lower = np.tril(np.ones((len(codes),) * 2, dtype=bool), k=-1)
                split = np.where(lower, grid("bottom_quartile"), grid("top_quartile"))
                np.fill_diagonal(split, np.nan)
                panels.append((split, f"QE ({matrix['qe_column']}): bottom 25 % below, top 25 % above"))
            finite = [g[np.isfinite(g)] for g, _ in panels]
            low = min((float(f.min()) for f in finite if f.size), default=0.0)
            vmin = min(np.floor(low * 20) / 20, 0.95)  # one colour scale for both panels, down to the lowest cell
            for ax, (g, title) in zip(axes[0], panels):
                _cells(ax, g, codes, title, plt, vmin)
            fig.tight_layout()
            save_png(fig, path)
    return draw


def draw_quartile_breakdown(result: dict, statistic: str = "kendall_tau_c"):
    """Grouped bars per language: the correlation on all items, the bottom and the top QE quartile."""
    def draw(path: str) -> None:
        with pyplot() as plt:
            codes = sorted(result["per_language"])
            quartile = result["by_qe_quartile"]
            values = {"all": [result["per_language"][c][statistic] for c in codes],
                      "bottom QE quartile": [quartile[c].get("bottom", {}).get(statistic) for c in codes],
                      "top QE quartile": [quartile[c].get("top", {}).get(statistic) for c in codes]}
            fig, ax = plt.subplots(figsize=(max(6, 0.8 * len(codes) + 2), 4), dpi=100)
            x = np.arange(len(codes))
            for i, (label, ys) in enumerate(values.items()):
                ax.bar(x + (i - 1) * 0.27, [np.nan if y is None else y for y in ys], width=0.27, label=label)
            ax.set(xticks=x, ylabel=statistic.replace("_", " "), title=f"{result['score_column']} vs "
                   f"{result['rating_column']} by translation-QE quartile")
            ax.set_xticklabels(codes)
            ax.axhline(0, color="black", linewidth=0.5)
            ax.legend(fontsize=8)
            fig.tight_layout()
            save_png(fig, path)
    return draw


def draw_xlr_scatter(result: dict):
    """XLR against BkR (and CORR) per model, mean over seeds (the BackRetrieval paper's Figure 2)."""
    def draw(path: str) -> None:
        with pyplot() as plt:
            fig, ax = plt.subplots(figsize=(6, 5), dpi=100)
            for name, m in sorted(result["models"].items()):
                ax.scatter(m["xlr"]["mean"], m["backretrieval"]["mean"], s=30)
                ax.annotate(name, (m["xlr"]["mean"], m["backretrieval"]["mean"]), fontsize=7, xytext=(3, 3),
                            textcoords="offset points")
            ax.set(xlabel=f"XLR Recall@{result['k']}", ylabel=f"BackRetrieval Recall@{result['k']}",
                   title=f"{len(result['models'])} models, N = {result['n']:,}, {result['seeds']} seeds")
            ax.grid(True, linewidth=0.3)
            fig.tight_layout()
            save_png(fig, path)
    return draw
