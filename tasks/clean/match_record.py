"""The matching step's completion record: `matches.parquet` is reused, not searched again, when what
it was found in is the same (the signature shards' output sha256, the input's and each table
reference's; each embedding folder's fingerprint; the references' names; the mode, the params and the
code) and the file still
hashes to what the record says. Written after matches.parquet: a record names a whole file."""
from __future__ import annotations

import json

import pyarrow as pa

from xmdata import __version__
from xmdata.runtime import storage
from xmdata.runtime.atomic import sha256_file, write_json_atomic
from xmdata.runtime.process import StageReport

from .params import CleanParams

RECORD = "_matches_done.json"
MATCHES = "matches.parquet"
VERSION = "1"  # bump when the same signatures and params give other matches (a matcher changed)


def matching_key(mode: str, kind: str, params: CleanParams, signed: StageReport,
                 references: list[tuple[str, StageReport | str]]) -> dict:
    """Everything that decides the matches, and nothing else (no host or time). REFERENCES, in their
    order: (its source as given, which the matches name; a table reference's signature stage, or an
    embedding folder's path, fingerprinted)."""
    from .fingerprint import reference_fingerprint

    def shards(report: StageReport) -> list:
        return [[r["shard"], r["output_sha256"]] for r in report.records]

    return {"code_version": f"xmdata-{__version__}/clean_matching-{VERSION}", "mode": mode, "kind": kind,
            "params": params.model_dump(mode="json"), "signatures": shards(signed),
            "references": [[source, reference_fingerprint(r) if isinstance(r, str) else shards(r)]
                           for source, r in references]}


def recorded_matches(out: str, key: dict) -> pa.Table | None:
    """OUT's matches when its record has KEY and the file is intact; None otherwise."""
    try:
        done = json.loads(storage.read_text(storage.join(out, RECORD)))
        if done.get("key") != json.loads(json.dumps(key)) or sha256_file(storage.join(out, MATCHES)) != done["sha256"]:
            return None
    except (FileNotFoundError, ValueError, KeyError):
        return None
    return storage.read_parquet(storage.join(out, MATCHES))


def record_matches(out: str, key: dict, sha256: str) -> None:
    write_json_atomic({"key": key, "sha256": sha256}, storage.join(out, RECORD))
