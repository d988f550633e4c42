"""The tables the explore page shows, from a release's data/ and rejects/: images with their place and
selection, texts (captions and translations) with their scores and where they stopped, rejects, and
the translation candidates per target language. Sorted, so the same release gives the same rows."""
from __future__ import annotations

import math
import os

import polars as pl

DIGITS = 4  # scores as the page shows them; rounding also keeps the files small
CANDIDATE_COLUMNS = ["segment", "beam_rank", "candidate", "sequence_score", "lid_label", "lid_label_raw", "lid_prob",
                     "lid_match", "qe_score", "status"]


def read_table(release: str, name: str) -> pl.DataFrame | None:
    """Table NAME of RELEASE (its numbered files too), without an embedded image's bytes (images.js has them)."""
    from .embed_images import IMAGE_COLUMN, table_files

    files = table_files(release, name)
    if not files:
        return None
    import pyarrow as pa
    import pyarrow.parquet as pq

    columns = [field.name for field in pq.read_schema(files[0])  # polars' schema reader globs the path
               if not (field.name == IMAGE_COLUMN and pa.types.is_struct(field.type))]
    # One file at a time: polars expands a list of paths as globs whatever glob= says (a release folder named
    # rel[1] would read nothing)
    return pl.concat([pl.read_parquet(f, columns=columns, glob=False) for f in files])


def _has(frame: pl.DataFrame | None, *columns: str) -> bool:
    return frame is not None and frame.height > 0 and all(c in frame.columns for c in columns)


def rejects_table(release: str) -> pl.DataFrame:
    folder = os.path.join(release, "rejects")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".parquet")) if os.path.isdir(folder) else []
    frames = [pl.read_parquet(os.path.join(folder, n), glob=False).select(
        pl.col(c).cast(pl.String) for c in ("stage", "reason", "row_id", "value")) for n in names]
    frame = pl.concat(frames) if frames else pl.DataFrame(schema={c: pl.String for c in
                                                                  ("stage", "reason", "row_id", "value")})
    return frame.with_columns(pl.col("value").str.slice(0, 200)).sort(pl.all(), nulls_last=True)


def _translation_key(frame: pl.DataFrame) -> pl.Expr:
    """The id a translation's text carries in clip_scores (`<id>@<target>`), with the column and list
    element when the translated table has more than one text per id."""
    several = frame["column"].n_unique() > 1 or frame["element"].drop_nulls().len() > 0
    if not several:
        return pl.format("{}@{}", "id", "target_language")
    element = pl.when(pl.col("element").is_null()).then(pl.lit("")).otherwise(
        pl.format("[{}]", pl.col("element").cast(pl.String)))
    return pl.format("{}:{}{}@{}", "id", "column", element, "target_language")


def texts_table(captions, translations, clip) -> pl.DataFrame:
    """One row per caption and per translation: language, text, image, scores, and where it stopped."""
    columns = {"id": pl.String, "kind": pl.String, "language": pl.String, "text": pl.String,
               "image_id": pl.String, "source_id": pl.String, "lid_label": pl.String, "lid_prob": pl.Float64,
               "qe_score": pl.Float64, "status": pl.String, "stage": pl.String, "reason": pl.String}
    parts = []
    if _has(captions, "id", "text"):
        language = pl.coalesce(*[pl.col(c) for c in ("language", "lid_label") if c in captions.columns],
                               pl.lit(None, pl.String))
        parts.append(captions.select(
            "id", kind=pl.lit("caption"), language=language, text="text",
            image_id=pl.col("image_id") if "image_id" in captions.columns else pl.lit(None, pl.String),
            source_id=pl.lit(None, pl.String),
            lid_label=pl.col("lid_label") if "lid_label" in captions.columns else pl.lit(None, pl.String),
            lid_prob=pl.col("lid_prob") if "lid_prob" in captions.columns else pl.lit(None, pl.Float64),
            qe_score=pl.lit(None, pl.Float64), status=pl.lit("kept"), stage=pl.lit(None, pl.String),
            reason=pl.lit(None, pl.String)))
    if _has(translations, "id", "column", "target_language", "status"):
        kept = pl.col("status") == "ok"
        images = (captions.select("id", "image_id").unique("id", keep="first")
                  if _has(captions, "id", "image_id") else pl.DataFrame(schema={"id": pl.String, "image_id": pl.String}))
        parts.append(translations.join(images, on="id", how="left").select(
            id=_translation_key(translations), kind=pl.lit("translation"), language="target_language",
            text="text", image_id="image_id", source_id="id", lid_label="lid_label", lid_prob="lid_prob",
            qe_score="qe_score", status=pl.when(kept).then(pl.lit("kept")).otherwise("status"),
            stage=pl.when(kept).then(None).otherwise(pl.lit("select_translations")), reason="reason"))
    texts = pl.concat([p.cast(columns) for p in parts]) if parts else pl.DataFrame(schema=columns)
    if _has(clip, "id", "clip_score"):  # a caption that clip_score refused: its stage and message
        scores = clip.select("id", clip_score=pl.col("clip_score").cast(pl.Float64),
                             clip_status=pl.col("status") if "status" in clip.columns else pl.lit("ok"),
                             clip_error=pl.col("error_message") if "error_message" in clip.columns
                             else pl.lit(None, pl.String)).unique("id", keep="first")
        texts = texts.join(scores, on="id", how="left")
        refused = (pl.col("clip_status") == "rejected") & pl.col("stage").is_null()
        texts = texts.with_columns(stage=pl.when(refused).then(pl.lit("clip_score")).otherwise("stage"),
                                   reason=pl.when(refused).then("clip_error").otherwise("reason"),
                                   ).drop("clip_status", "clip_error")
    else:
        texts = texts.with_columns(clip_score=pl.lit(None, pl.Float64))
    return texts.sort("id", "kind", nulls_last=True)


def link_texts(texts: pl.DataFrame, images: pl.DataFrame) -> pl.DataFrame:
    """A text's image and source caption as row numbers into the images and texts tables (a third
    of data.js was these ids written out again); source_id stays only for sources not among the texts,
    and a translation's id `<source>@<language>` is left empty for the page to rebuild."""
    texts = texts.with_row_index("row").join(
        images.select("image_id", image=pl.int_range(pl.len(), dtype=pl.Int32)), on="image_id", how="left").join(
        texts.select(source_id="id", source=pl.int_range(pl.len(), dtype=pl.Int32)), on="source_id", how="left")
    texts = texts.sort("row").with_columns(pl.col("image", "source").fill_null(-1))
    orphans = texts.filter(pl.col("source_id").is_not_null() & (pl.col("source") < 0)).height
    derived = (pl.col("source") >= 0) & (pl.col("id") == pl.format("{}@{}", "source_id", "language"))
    texts = texts.with_columns(id=pl.when(derived).then(pl.lit("")).otherwise("id"))  # the page rebuilds it
    return texts.drop("row", "image_id", *([] if orphans else ["source_id"]))


def images_table(selection, captions, clip, downloads) -> pl.DataFrame:
    """One row per image: place, the languages that selected it (with their level), and the path the
    scoring stage read it by (or the download's), relative to the image folder."""
    places = pl.DataFrame(schema={"image_id": pl.String, "latitude": pl.Float64, "longitude": pl.Float64,
                                  "country": pl.String, "selected": pl.String})
    if _has(selection, "image_id", "language", "level"):
        cols = {c: (pl.col(c) if c in selection.columns else pl.lit(None)).cast(places.schema[c])
                for c in ("latitude", "longitude", "country")}
        places = selection.sort("image_id", "language").group_by("image_id", maintain_order=True).agg(
            *[e.first() for e in cols.values()],
            selected=pl.format("{}:{}", "language", "level").str.join(" "))
    ids = [places.select("image_id")]
    ids += [f.select(pl.col("image_id").cast(pl.String)) for f in (captions, clip) if _has(f, "image_id")]
    paths = pl.DataFrame(schema={"image_id": pl.String, "path": pl.String})
    if _has(clip, "image_id", "image_path"):
        paths = clip.select("image_id", path="image_path")
    elif _has(downloads, "id", "image_path"):  # image_downloads: relative to the download's folder
        paths = downloads.select(image_id=pl.col("id").cast(pl.String), path="image_path")
    paths = paths.drop_nulls().sort("image_id", "path").unique("image_id", keep="first")
    every = pl.concat(ids).drop_nulls().unique()
    return every.join(places, on="image_id", how="left").join(paths, on="image_id", how="left").sort("image_id")


def candidate_languages(candidates) -> list[str]:
    return sorted(candidates["target_language"].drop_nulls().unique().to_list()) \
        if _has(candidates, "target_language") else []


def candidates_by_language(translations, candidates) -> dict[str, dict]:
    """{target language: {"units": {text id: candidate rows}, "columns": [...], "source": {id: text}}}."""
    if not _has(candidates, "id", "column", "target_language", "candidate") or translations is None:
        return {}
    keyed = candidates.with_columns(key=_translation_key(translations if translations.height else candidates))
    columns = [c for c in CANDIDATE_COLUMNS if c in keyed.columns]
    keyed = keyed.sort("key", *[c for c in ("segment", "beam_rank", "candidate") if c in columns], nulls_last=True)
    shards = {}
    for lang in candidate_languages(candidates):
        rows = keyed.filter(pl.col("target_language") == lang)
        units: dict[str, list] = {}
        for key, *row in rows.select("key", *columns).iter_rows():  # sorted by key: one pass
            units.setdefault(key, []).append([rounded(v) for v in row])
        source = dict(rows.select("key", "source_text").unique("key", keep="first").sort("key").iter_rows()) \
            if "source_text" in rows.columns else {}
        shards[lang] = {"columns": columns, "units": units, "source": source}
    return shards


def rounded(v):
    """A float as the page shows it; NaN and infinities as null (JSON has neither)."""
    if isinstance(v, float):
        return round(v, DIGITS) if math.isfinite(v) else None
    return v


MATCH_SHOWN = ["check", "table", "group", "id", "match_id", "match_source", "method", "score", "measure", "measure_unit",
               "path", "match_path", "text", "match_text"]


def matches_table(matches: pl.DataFrame | None, rejects: pl.DataFrame) -> pl.DataFrame:
    """The clean checks' pairs, each beside its group: a near-duplicate's group is the representative its
    reject names (chains included), any other pair's the row it matched; sorted so a group's pairs sit together."""
    if matches is None or not matches.height:
        return pl.DataFrame(schema={c: pl.String for c in MATCH_SHOWN})
    kept_as = rejects.filter(pl.col("reason") == "near_duplicate").select(id="row_id", group="value").unique("id")
    frame = matches.join(kept_as, on="id", how="left").with_columns(pl.coalesce("group", "match_id").alias("group"))
    for column in MATCH_SHOWN:
        if column not in frame.columns:
            frame = frame.with_columns(pl.lit(None, pl.String).alias(column))
    return frame.select(MATCH_SHOWN).sort("check", "table", "group", "id", "method", "match_id", nulls_last=True)
