"""A PNG map of the selection: each image a dot at its GPS, coloured by language (no basemap:
nothing is downloaded; coastlines show through the photos themselves)."""
from __future__ import annotations

import pyarrow as pa

from xmdata.runtime.figures import drawn_key, figure_key, pyplot, save_png


def write_selection_map(selection: pa.Table, path: str, title: str) -> None:
    """Drawn when the selection or title changed; the same map is kept as it is (figures.py)."""
    key = figure_key(selection, title)
    if drawn_key(path) == key:
        return
    with pyplot() as plt:
        languages = sorted(set(selection.column("language").to_pylist()))
        colours = plt.get_cmap("tab20", max(1, len(languages)))
        fig, ax = plt.subplots(figsize=(12, 6), dpi=100)
        lat, lon = selection.column("latitude").to_numpy(), selection.column("longitude").to_numpy()
        language = selection.column("language").to_pylist()
        for i, code in enumerate(languages):
            mask = [lang == code for lang in language]
            ax.scatter(lon[mask], lat[mask], s=6, color=colours(i % 20), label=code, linewidths=0)
        ax.set(xlim=(-180, 180), ylim=(-90, 90), xlabel="longitude", ylabel="latitude", title=title)
        ax.grid(True, linewidth=0.3)
        ax.legend(ncol=2, fontsize=6, loc="center left", bbox_to_anchor=(1.0, 0.5), markerscale=2)
        fig.tight_layout()
        save_png(fig, path, key)  # no date or version in it: the same selection gives the same bytes
