"""`xmdata release compare A B`: are two releases the same data, floats within a tolerance?

On one platform a release is byte-identical; on another CPU, BLAS or torch build a model's outputs
move in their last digits. So tables are matched row by row on their ids (compare_tables.py): every id, text,
label, count and decision must be equal, a float may differ by the tolerance; JSON files by value,
the rest by bytes. polars, pyarrow and the manifest helpers are imported where they are used: the
CLI reads TOLERANCE for its --help, which stays light.
"""
from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass

from .compare_files import FileResult, compare_file, first_line, json_differences

# The default largest absolute difference between two floats taken as equal. Not ranking.TIE (1e-6,
# a cosine's kernel noise within one machine): this bounds a whole model's outputs across machines.
TOLERANCE = 1e-5
VOLATILE = ("built_at", "platform", "release_sha256")  # manifest.json: when, where, and a hash of bytes


@dataclass
class Comparison:
    tolerance: float
    files: dict[str, FileResult]

    @property
    def differences(self) -> int:
        return sum(r.differences for r in self.files.values())

    def lines(self) -> list[str]:
        """One line per difference, at most SHOWN per file, then how many more."""
        out = []
        for name, result in self.files.items():
            out += [f"{name}: {line}" for line in result.lines]
            if result.differences > len(result.lines):
                out.append(f"{name}: … and {result.differences - len(result.lines)} more differences")
        return out

    def summary(self) -> list[str]:
        tables = {n: r for n, r in self.files.items() if r.rows is not None}
        out = [f"{name}: {r.rows} rows" + (f", max float difference {r.max_float[0]:.3g}"
                                           + (f" ({r.max_float[1]})" if r.max_float[0] else "")
                                           if r.max_float else "") for name, r in tables.items()]
        return out + [f"{len(tables)} tables ({sum(r.rows for r in tables.values())} rows) and "
                      f"{len(self.files) - len(tables)} other files: the same, floats within {self.tolerance:g}"]


def compare_releases(a: str, b: str, tolerance: float = TOLERANCE) -> Comparison:
    """Every difference between releases A and B; ContractError when either is not a release."""
    from xmdata.schemas import ContractError

    from .compare_tables import compare_tables
    from .manifest import MANIFEST

    if not (isinstance(tolerance, (int, float)) and math.isfinite(tolerance) and tolerance >= 0):
        raise ContractError(f"the tolerance is a finite number of at least 0, got {tolerance}")
    (manifest_a, files_a), (manifest_b, files_b) = _release(a), _release(b)
    files = {}
    for name in sorted(set(files_a) | set(files_b)):
        if name in files_a and name in files_b:
            if name.startswith("explore/"):  # the page, written from the tables compared here within tolerance
                files[name] = FileResult()
                continue
            try:
                compare = compare_tables if name.endswith(".parquet") else compare_file
                files[name] = compare(name, os.path.join(a, name), os.path.join(b, name), tolerance)
            except OSError as exc:
                files[name] = FileResult(1, [f"unreadable ({first_line(exc)})"])
        else:
            files[name] = FileResult(1, [f"only in {'A' if name in files_a else 'B'}"])
    files[MANIFEST] = FileResult()
    files[MANIFEST].add(json_differences(_lasting(manifest_a), _lasting(manifest_b), tolerance))
    return Comparison(tolerance, files)


def _release(folder: str) -> tuple[dict, list[str]]:
    """A release's manifest and files (its build folder left out), or a one-line ContractError."""
    from xmdata.schemas import ContractError

    from .manifest import MANIFEST, release_files

    if not os.path.isfile(os.path.join(folder, MANIFEST)):
        raise ContractError(f"{folder}: not a release (no {MANIFEST})")
    try:
        with open(os.path.join(folder, MANIFEST), encoding="utf-8") as file:
            manifest = json.load(file)
        work = manifest["release"].get("work_folder")
        return manifest, release_files(folder, {work} if work else set())
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise ContractError(f"{folder}: unreadable release ({first_line(exc)})") from None


def _lasting(manifest: dict) -> dict:
    """The manifest without when and where it was built, nor its files' checksums: the files
    themselves are compared, so a table whose floats moved within tolerance is not a difference."""
    kept = {k: v for k, v in manifest.items() if k not in VOLATILE}
    if isinstance(kept.get("release"), dict):
        kept["release"] = {k: v for k, v in kept["release"].items() if k != "files"}
    return kept
