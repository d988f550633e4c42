"""`explain(folder, id)`: every kind of row the id names in the folder, each with its path through
the stages; an id found nowhere is refused, naming the tables searched."""
from __future__ import annotations

from dataclasses import dataclass, field

from xmdata.schemas import ContractError

from .captions import caption_trace, pair_trace
from .folders import Folders, open_folders
from .images import image_trace
from .qa import qa_trace
from .trace import Trace


@dataclass
class Explanation:
    id: str
    folder: str
    build: str | None  # the work folder read, None when gone
    notes: list[str] = field(default_factory=list)
    traces: list[Trace] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"id": self.id, "folder": self.folder, "build": self.build, "notes": self.notes,
                "traces": [t.to_dict() for t in self.traces]}


def explain(folder: str, row_id: str, build: str | None = None) -> Explanation:
    folders = open_folders(folder, build)
    result = Explanation(row_id, folders.release or folders.work, folders.work, notes(folders))
    caption = caption_trace(folders, row_id)
    finders = [lambda: caption, lambda: None if caption else pair_trace(folders, row_id),
               lambda: image_trace(folders, row_id), lambda: qa_trace(folders, row_id)]
    result.traces = [t for t in (f() for f in finders) if t is not None]
    if not result.traces:
        searched = ", ".join(dict.fromkeys(folders.searched)) or "none"
        raise ContractError(f"{row_id}: no such id in {result.folder} (searched: {searched})")
    return result


def notes(folders: Folders) -> list[str]:
    if folders.release and not folders.work:
        return ["the build folder is gone (or was never recorded): this is what the published tables and "
                "rejects say; ingest shards, completion records, geocoding of unselected images and the QA "
                "instances' inputs are not in them"]
    if not folders.release:
        return ["a work folder without its release: params from the stage's own files where it keeps them, "
                "else only the params hash of each shard's record"]
    return []
