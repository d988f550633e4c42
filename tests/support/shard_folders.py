"""What the slow tests read of a run's shard folders."""
from __future__ import annotations


def finished_shards(done_dir) -> int:
    """Completion records in a stage's _done folder. Not os.listdir: a run killed while writing a
    record leaves its temp file (.tmp-*.part) there, which is not a finished shard."""
    return len(list(done_dir.glob("shard-*.json"))) if done_dir.exists() else 0
