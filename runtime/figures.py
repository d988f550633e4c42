"""PNG figures, every one written by `save_png`: the same figure, the same bytes (no date or version
in the metadata). Where a figure is given a key of what it shows (its data, title and the matplotlib
version), the key is written into the PNG itself, as a tEXt chunk: a re-run on the same data finds it
and keeps the file, without importing matplotlib or drawing (seconds each)."""
from __future__ import annotations

import contextlib
import hashlib
import struct
import threading
from importlib import metadata

import pyarrow as pa

from .atomic import replace_atomically

KEYWORD = "xmdata-input"
_PYPLOT = threading.Lock()  # pyplot's figures and state are the process's: one drawing at a time
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def figure_key(table: pa.Table, *parts: str) -> str:
    """A hash of the rows a figure draws and whatever else decides it (title, labels)."""
    digest = hashlib.sha256()
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    digest.update(sink.getvalue().to_pybytes())
    for part in (f"matplotlib={metadata.version('matplotlib')}", *parts):
        digest.update(b"\0" + part.encode())
    return digest.hexdigest()


def drawn_key(path: str) -> str | None:
    """The key in the PNG at `path`, read from its chunks before the image data; None if none."""
    try:
        with open(path, "rb") as f:
            if f.read(8) != PNG_SIGNATURE:
                return None
            while header := f.read(8):
                length, kind = struct.unpack(">I4s", header)
                if kind == b"IDAT" or length > 1 << 20:
                    return None
                body = f.read(length + 4)[:length]
                if kind == b"tEXt":
                    keyword, _, text = body.partition(b"\0")
                    if keyword == KEYWORD.encode():
                        return text.decode("latin-1")
    except (OSError, struct.error):
        return None
    return None


@contextlib.contextmanager
def pyplot():
    """matplotlib.pyplot on the Agg backend, to one caller at a time: parts of a build drawing side
    by side (runtime/side_by_side.py) would otherwise share its current figure."""
    with _PYPLOT:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        yield plt


def save_png(fig, path: str, key: str | None = None, *, private: bool = False, **savefig) -> None:
    """The one way a figure is written: atomically (`private`: 0600), then closed. No date or version in
    the metadata, so the same figure gives the same bytes; `key` (figure_key), when given, is kept in a
    tEXt chunk so that a re-run on the same data keeps the file undrawn."""
    import matplotlib.pyplot as plt

    metadata_ = {"Software": None, **({KEYWORD: key} if key is not None else {})}
    replace_atomically(path, lambda tmp: fig.savefig(tmp, format="png", metadata=metadata_, **savefig),
                       private=private)
    plt.close(fig)


def without_key(data: bytes) -> bytes:
    """A PNG's bytes less the key chunk: two figures of data equal within a tolerance (another CPU's
    last digits) have other keys and, drawn alike, the same pixels — `release compare` compares these."""
    if not data.startswith(PNG_SIGNATURE):
        return data
    out, at = [PNG_SIGNATURE], len(PNG_SIGNATURE)
    while at + 8 <= len(data):
        length, kind = struct.unpack(">I4s", data[at:at + 8])
        end = at + 12 + length
        if not (kind == b"tEXt" and data[at + 8:at + 8 + length].startswith(KEYWORD.encode() + b"\0")):
            out.append(data[at:end])
        at = end
    out.append(data[at:])
    return b"".join(out)
