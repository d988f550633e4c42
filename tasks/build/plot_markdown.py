"""Plots inside a Prefect artifact. The UI is an http page: it shows no `file://` image and follows no
such link, so a run's plots go into its markdown artifact as `data:image/png;base64,…` images, which
the UI renders as they are (checked in Chromium: tests/ui/test_ui.py). Storage is the server's
database: a plot over MAX_INLINE_BYTES is named by its path instead."""
from __future__ import annotations

import base64
import os
import re

from xmdata.runtime import storage

MAX_INLINE_BYTES = 1_000_000  # the project's plots are 15–60 kB
_RELATIVE_PNG = re.compile(r"!\[([^\]]*)\]\((?![A-Za-z][A-Za-z0-9+.-]*:)([^)\s]+\.png)\)")


def plot_image(path: str, alt: str) -> str:
    """A markdown image holding the PNG at PATH (local or a store URL); its path when it is too big."""
    try:
        if not storage.exists(path):
            return f"*{alt}: not written*"
        with storage.open_file(path, "rb") as f:
            data = f.read(MAX_INLINE_BYTES + 1)
    except (OSError, ValueError) as exc:  # a path no store can read: named, the artifact still written
        return f"*{alt}: `{path}` ({exc})*"
    if len(data) > MAX_INLINE_BYTES:
        return f"*{alt}: `{path}` ({len(data) // 1000}+ kB, too big to show here)*"
    return f"![{alt}](data:image/png;base64,{base64.b64encode(data).decode('ascii')})"


def plots_section(paths: list[str]) -> str:
    """`### Plots` with every existing PNG of PATHS inline, named by its file; empty when none exists."""
    shown = [f"{plot_image(p, os.path.basename(p))}\n" for p in paths if _exists(p)]
    return "\n### Plots\n\n" + "\n".join(shown) if shown else ""


def inline_images(markdown: str, base: str) -> str:
    """MARKDOWN with each relative `![alt](x.png)` (a dataset card's plots) holding the file under BASE."""
    return _RELATIVE_PNG.sub(lambda m: plot_image(storage.join(base, m.group(2)), m.group(1)), markdown)


def _exists(path: str) -> bool:
    try:
        return storage.exists(path)
    except (OSError, ValueError):
        return False
