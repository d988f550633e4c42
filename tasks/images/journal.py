"""Row-level resume: each row's outcome is appended to the shard's journal once its image is stored, so
a run killed mid-shard refetches only the rows it had not finished. The first line names the params
hash and code version; a journal of other params is ignored. An object store has no append: there a
journal is only written whole (--retry-failed's rows to keep), and a killed shard is fetched again."""
from __future__ import annotations

import json
import os
import threading

from xmdata.runtime import storage

from .write import STAGE


class Journal:
    def __init__(self, root: str, index: int, version: dict):
        self.appends = not storage.is_url(root)
        self.path = storage.join(root, STAGE, "_partial", f"shard-{index:05d}.jsonl")
        self.version, self.lock, self.handle = version, threading.Lock(), None

    def load(self) -> dict[str, dict]:
        """Finished rows by id, from a journal of these params; an unusable journal is started afresh."""
        try:
            lines = storage.read_text(self.path).split("\n")
        except FileNotFoundError:
            return {}
        rows: dict[str, dict] = {}
        try:
            if json.loads(lines[0]) != self.version:
                return {}
            for line in lines[1:]:
                if line:
                    entry = json.loads(line)
                    rows[entry["id"]] = entry
        except (json.JSONDecodeError, KeyError):  # a line cut by the kill is the last: keep those before
            pass
        return rows

    def start(self, kept: list[dict]) -> None:
        """Rewrite the journal with the rows kept from before, then append as rows finish."""
        if not self.appends:
            return
        os.makedirs(os.path.dirname(self.path), exist_ok=True)
        self.handle = open(self.path, "w", encoding="utf-8")
        self.handle.write(json.dumps(self.version) + "\n")
        for entry in kept:
            self.handle.write(json.dumps(entry) + "\n")
        self.handle.flush()

    def add(self, entry: dict) -> None:
        if self.handle is None:
            return
        with self.lock:  # a line is written whole and reaches the OS before the next (a kill keeps it)
            self.handle.write(json.dumps(entry) + "\n")
            self.handle.flush()

    def close(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def write_journal(root: str, index: int, version: dict, entries: list[dict]) -> None:
    """A journal of rows to keep as they are (--retry-failed)."""
    journal = Journal(root, index, version)
    if not journal.appends:
        lines = [json.dumps(version)] + [json.dumps(e) for e in entries]
        storage.write_bytes(journal.path, ("\n".join(lines) + "\n").encode())
        return
    journal.start(entries)
    journal.close()
