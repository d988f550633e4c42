"""Which code this is: a fingerprint of every source file of the packages, by name, size and mtime.
The service restarts its warm processes when it changes (service/service_files.py); a release's
publication record names it (tasks/release/publication.py). Importable for nearly nothing (the
`xmdata` entry point reads it before anything heavy)."""
from __future__ import annotations

import hashlib
import importlib.util
import os

SOURCE_PACKAGES = ("xmdata", "xmdata.runtime", "xmdata.service", "xmdata.flows", "xmdata.tasks", "xmdata.models",
                   "xmdata.schemas")


def code_fingerprint() -> str:
    """Name, size and mtime of every source file: warm workers must not run yesterday's code."""
    digest = hashlib.sha256()
    for package in SOURCE_PACKAGES:  # and their subpackages (tasks/evaluation/, tasks/importers/…)
        for top in importlib.util.find_spec(package).submodule_search_locations or []:
            for root, dirs, names in os.walk(top):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for name in sorted(n for n in names if n.endswith(".py")):
                    st = os.stat(os.path.join(root, name))
                    where = os.path.relpath(os.path.join(root, name), top)
                    digest.update(f"{package}/{where}:{st.st_size}:{st.st_mtime_ns};".encode())
    return digest.hexdigest()[:16]
