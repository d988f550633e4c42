"""Scoring build: image–text pairs in; CLIPScore, RefCLIPScore and optionally embeddings out, shard
by shard on Dask, the open_clip model loaded once per worker."""
from __future__ import annotations

import posixpath
import time
import polars as pl
import pyarrow as pa
from prefect import flow

from xmdata.runtime import storage
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.scoring.score import clip_score_stage
from xmdata.tasks.scoring.input import check_score_run, read_score_input
from xmdata.tasks.stage_params import DEFAULT_SHARDS, ScoringParams, ShardCount
from xmdata.tasks.build.summary import frame_label_counts

from .finish import finish_build


def score_pairs(source: str | pa.Table, out: str, shards: int, image_root: str | None, params: ScoringParams,
                references_column: str | None = None, checked: bool = False) -> tuple[list[StageReport], dict]:
    """Ingest the pairs (a file or a table) into `pairs` shards and score each on the flow's runner; the
    run's checks first (check_score_run) unless the caller made them (`checked`)."""
    if checked or not image_root:
        pairs = read_score_input(source, references_column)
    else:
        pairs = check_score_run(source, params, image_root, references_column)
    ingested = ingest(pairs, "pairs", shards, out)
    stage = clip_score_stage(params, params.spec(), storage.absolute(image_root) if image_root else None,
                             references_column)
    scored = run_stage(stage, ingested.data_paths, out)
    return [ingested, scored], score_distributions(scored.data_paths)


def score_distributions(paths: list[str]) -> dict:
    """Data facts for summary.json: statuses, and mean scores rounded so that reruns match."""
    columns = ["status", "clip_score", "ref_clip_score"]
    frame = pl.concat([pl.from_arrow(storage.read_parquet(p, columns=columns)) for p in paths])
    means = {column: round(value, 4) for column in ("clip_score", "ref_clip_score")
             if (value := frame[column].drop_nulls().mean()) is not None}
    return {"status": frame_label_counts(frame, "status"), "mean_score": means}


def scoring_run(report: StageReport, seconds: float) -> dict:
    """How this run went: pairs scored and refused, and pairs per second (not in summary.json)."""
    scored = report.rows_out - sum(report.rejected.values())
    resumed = report.shards_skipped > 0  # finished shards took no time: a rate would flatter
    return {"pairs": report.rows_in, "scored": scored, "rejected": report.rejected, "seconds": round(seconds, 2),
            "pairs_per_second": None if resumed or not seconds else round(report.rows_in / seconds, 1)}


def scoring_run_markdown(run: dict) -> str:
    rejected = ", ".join(f"{k}: {v}" for k, v in run["rejected"].items()) or "none"
    rate = run["pairs_per_second"]
    rate = f"{rate} pairs/s" if rate is not None else "n/a (some shards were already finished)"
    return (f"\n**scoring run**: {run['scored']} of {run['pairs']} pairs scored; rejected {rejected}; "
            f"{run['seconds']} s, {rate} (Prefect server and cluster start not included)\n")


@flow(name="score")
def score_flow(input_path: str, out: str, params: ScoringParams, image_root: str | None = None,
               references_column: str | None = None, shards: ShardCount = DEFAULT_SHARDS, checked: bool = False) -> dict:
    """Score every image–text pair of INPUT_PATH with open_clip; image paths are relative to IMAGE_ROOT
    (default: the input file's folder).

    Args:
        input_path: pairs: id, text, image_path or image_bytes [, language, references]
        out: output folder
        params: the open_clip model and how to score with it
        image_root: folder the image paths are under (default: the input's folder)
        references_column: list-of-strings column of references: adds RefCLIPScore
        shards: the fewest shards the input is split into (by a hash of each row's id); more when it has
            more rows than XMDATA_SHARD_ROWS a shard
        checked: the caller made the run's checks already (the command line does, before any server
            starts), so they are not made twice

    Docs: docs/how-to/score.md; every option: docs/reference/commands.md#score.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        started = time.perf_counter()
        reports, distributions = score_pairs(input_path, out, shards, image_root or posixpath.dirname(
            storage.absolute(input_path)), params, references_column, checked)
        run = scoring_run(reports[-1], time.perf_counter() - started)
        result = finish_build(out, reports, distributions, f"Scoring of {input_path}", scoring_run_markdown(run))
        result["scoring_run"] = run
        return result
