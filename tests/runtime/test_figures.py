"""A figure is drawn once per input: the same data keeps the PNG (its bytes and mtime), other data
or another title draws it again; the key travels inside the PNG."""
from __future__ import annotations

import os

import pyarrow as pa

from xmdata.runtime.figures import drawn_key, figure_key, without_key
from xmdata.tasks.selection.selection_map import write_selection_map


def _selection(lat: float) -> pa.Table:
    return pa.table({"id": ["a", "b"], "latitude": [lat, -10.0], "longitude": [2.0, 30.0], "language": ["fr", "sw"]})


def test_the_same_selection_keeps_its_map_and_another_draws_it_again(tmp_path):
    path = str(tmp_path / "map.png")
    write_selection_map(_selection(48.0), path, "greedy")
    key, first = drawn_key(path), open(path, "rb").read()
    assert key == figure_key(_selection(48.0), "greedy")
    os.utime(path, ns=(1, 1))
    write_selection_map(_selection(48.0), path, "greedy")
    assert os.stat(path).st_mtime_ns == 1  # kept, not drawn again
    write_selection_map(_selection(48.5), path, "greedy")
    assert drawn_key(path) != key and open(path, "rb").read() != first
    write_selection_map(_selection(48.5), path, "optimal")
    assert drawn_key(path) == figure_key(_selection(48.5), "optimal")


def test_a_file_that_is_no_png_of_ours_has_no_key(tmp_path):
    (tmp_path / "x.png").write_bytes(b"not a png")
    assert drawn_key(str(tmp_path / "x.png")) is None and drawn_key(str(tmp_path / "missing.png")) is None


def test_the_same_picture_of_other_data_differs_only_in_its_key(tmp_path):
    """Floats another CPU moves in their last digits draw the same pixels: only the key chunk differs,
    and `release compare` compares the PNGs without it."""
    a, b = str(tmp_path / "a.png"), str(tmp_path / "b.png")
    write_selection_map(_selection(48.0), a, "greedy")
    write_selection_map(_selection(48.0 + 1e-9), b, "greedy")
    data_a, data_b = open(a, "rb").read(), open(b, "rb").read()
    assert data_a != data_b and without_key(data_a) == without_key(data_b)
    assert drawn_key(a) and KEY_BYTES not in without_key(data_a)


KEY_BYTES = b"xmdata-input"
