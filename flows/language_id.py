"""Language ID build: validate texts, shard them, label every text with fastText, summarise."""
from __future__ import annotations

from prefect import flow

from xmdata.models.base import ModelSpec
from xmdata.runtime.execution import run_stage
from xmdata.runtime.process import StageReport
from xmdata.runtime.folder_lock import one_writer
from xmdata.schemas import CAPTIONS
from xmdata.schemas.input_batches import open_input
from xmdata.tasks.build.ingest import ingest
from xmdata.tasks.translation.language_id import language_id_stage
from xmdata.tasks.stage_params import DEFAULT_SHARDS, LanguageIdParams, ShardCount
from xmdata.tasks.build.summary import frame_label_counts

from .finish import finish_build


def label_languages(input_path: str, out: str, shards: int, params: LanguageIdParams
                    ) -> tuple[list[StageReport], dict]:
    # A broken input is refused whole before a shard is written: ingest checks each batch as it reads it.
    ingested = ingest(open_input(input_path, CAPTIONS), "captions", shards, out)
    labelled = run_stage(language_id_stage(ModelSpec("fasttext", params.lid_model)), ingested.data_paths, out)
    return [ingested, labelled], lid_distributions(labelled.data_paths)


def lid_distributions(paths: list[str]) -> dict:
    """Rows per label (the project's code); model labels that name no single language (lid.176's `sh`,
    `nah`, `eml`) counted apart by the model's own label, never guessed."""
    import polars as pl

    from xmdata.runtime import storage

    columns = ["lid_label", "lid_label_raw"]
    frame = pl.concat([pl.from_arrow(storage.read_parquet(p, columns=columns)).group_by(columns).len()
                       for p in paths])  # counted shard by shard: never every row at once
    unmapped = frame.filter(pl.col("lid_label").is_null())
    return {"lid_label": frame_label_counts(frame.drop_nulls("lid_label"), "lid_label", "len"),
            "lid_label_no_single_language": frame_label_counts(unmapped, "lid_label_raw", "len")}


@flow(name="identify-language")
def identify_language_flow(input_path: str, out: str, params: LanguageIdParams = LanguageIdParams(),
                           shards: ShardCount = DEFAULT_SHARDS) -> dict:
    """Label every text of INPUT with its language (fastText lid.176 by default).

    Args:
        input_path: captions table (Parquet, CSV, JSONL) with id and text
        out: output folder (shards, rejects, summary)
        params: the language identifier
        shards: the fewest shards the input is split into (by a hash of each row's id); more when it has
            more rows than XMDATA_SHARD_ROWS a shard

    Docs: docs/how-to/commands.md; every option: docs/reference/commands.md#identify-language.
    """
    with one_writer(out):  # one writer; a killed run's temp files swept (runtime/folder_lock.py)
        reports, distributions = label_languages(input_path, out, shards, params)
        return finish_build(out, reports, distributions, f"Language ID of {input_path}")
