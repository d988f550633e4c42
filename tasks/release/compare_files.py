"""One file of two releases compared, as `xmdata release compare` reports it: JSON by value (numbers
within the tolerance), any other file but a table by bytes, with the first differing line."""
from __future__ import annotations

import filecmp
import json
import math
from dataclasses import dataclass, field

SHOWN = 10  # difference lines shown per file; the others are counted


@dataclass
class FileResult:
    differences: int = 0
    lines: list[str] = field(default_factory=list)  # the first SHOWN differences
    rows: int | None = None  # a table's rows (in A)
    max_float: tuple[float, str | None] | None = None  # a table's largest float difference, its column

    def add(self, lines: list[str], count: int | None = None) -> None:
        self.differences += len(lines) if count is None else count
        self.lines += lines[:SHOWN - len(self.lines)]


def compare_file(name: str, path_a: str, path_b: str, tolerance: float) -> FileResult:
    """JSON by values (numbers within tolerance), the rest by bytes (tables: compare_tables.py)."""
    result = FileResult()
    if filecmp.cmp(path_a, path_b, shallow=False):
        return result
    with open(path_a, "rb") as file_a, open(path_b, "rb") as file_b:
        data_a, data_b = file_a.read(), file_b.read()
    if name.endswith(".json"):
        try:
            json_a, json_b = json.loads(data_a), json.loads(data_b)
            if name == "croissant.json":  # its tables' checksums: the tables themselves are compared
                from .croissant import lasting
                json_a, json_b = lasting(json_a), lasting(json_b)
            result.add(json_differences(json_a, json_b, tolerance))
            return result
        except ValueError:
            pass  # not JSON (any more): bytes
    if name.endswith(".png"):  # the key of the data a figure drew is not the figure (runtime/figures.py)
        from xmdata.runtime.figures import without_key

        data_a, data_b = without_key(data_a), without_key(data_b)
        if data_a == data_b:
            return result
    result.add([_first_difference(data_a, data_b)])
    return result


def json_differences(a, b, tolerance: float, path: str = "") -> list[str]:
    """Where A and B differ: numbers by more than the tolerance, anything else at all."""
    where = path or "(top)"
    if _number(a) and _number(b):
        return [] if _close(a, b, tolerance) else [f"{where}: {show_value(a)} (A) != {show_value(b)} (B)"]
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            inner = f"{path}.{key}" if path else str(key)
            out += (json_differences(a[key], b[key], tolerance, inner) if key in a and key in b
                    else [f"{inner}: only in {'A' if key in a else 'B'}"])
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = [] if len(a) == len(b) else [f"{where}: {len(a)} items (A) != {len(b)} (B)"]
        for i, (x, y) in enumerate(zip(a, b)):
            out += json_differences(x, y, tolerance, f"{path}[{i}]")
        return out
    return [] if type(a) is type(b) and a == b else [f"{where}: {show_value(a)} (A) != {show_value(b)} (B)"]


def _number(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def _close(x: float, y: float, tolerance: float) -> bool:
    return x == y or abs(x - y) <= tolerance or (math.isnan(x) and math.isnan(y))


def first_line(exc: Exception) -> str:
    return f"{type(exc).__name__}: {(str(exc).splitlines() or [''])[0][:120]}"


def show_value(value) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "…"


def _first_difference(data_a: bytes, data_b: bytes) -> str:
    try:
        lines_a, lines_b = data_a.decode().splitlines(), data_b.decode().splitlines()
    except UnicodeDecodeError:
        return f"differs ({len(data_a)} bytes in A, {len(data_b)} in B)"
    for number, (x, y) in enumerate(zip(lines_a + [None], lines_b + [None]), 1):
        if x != y:
            return f"line {number}: {show_value(x)} (A) != {show_value(y)} (B)"
    return "differs in line endings"
