"""Caption statistics per language (Crossmodal-3600 Table 1) and caption-quality shares from raters'
median ratings (Table 2)."""
from __future__ import annotations

import unicodedata

import numpy as np
import polars as pl
import pyarrow as pa

from xmdata.schemas.contract import ContractError, Violation
from xmdata.schemas.evaluation import labels, require_columns, row_labels

from xmdata.tasks.evaluation.accuracy import group_labels
from xmdata.tasks.evaluation.tokenize import is_unspaced, tokenize, whitespace_words

RATING_LEVELS = {"bad": 0, "medium": 1, "good": 2, "excellent": 3}
NOT_ENOUGH_INFO = {"not-enough-info", "not_enough_info", "not enough info", "nei"}


def caption_statistics(table: pa.Table, text: str = "text", image: str = "image_id",
                       language: str = "language", source: str = "input", id_column: str = "id") -> dict:
    """Per language over distinct captions (same image, same NFC text with whitespace collapsed):
    their number, images with 1, 2 and 3+ of them, mean words as Table 1 counts them (whitespace runs),
    mean script-aware tokens (see eval_tokenize), and mean characters (Unicode code points, spaces included)."""
    require_columns(table, {text: "text", image: "label", language: "label"}, source)
    raw = labels(table, text, source, id_column)
    df = pl.DataFrame({"lang": group_labels(table, language, source, id_column).tolist(),
                       "image": [str(v) for v in labels(table, image, source, id_column)],
                       "text": [" ".join(unicodedata.normalize("NFC", t).split()) for t in raw]},
                      schema={"lang": pl.String, "image": pl.String, "text": pl.String})
    distinct = df.filter(pl.col("text") != "").unique(["lang", "image", "text"], maintain_order=True)
    texts = distinct["text"].to_list()
    distinct = distinct.with_columns(words=pl.Series([whitespace_words(t) for t in texts], dtype=pl.Int64),
                                     tokens=pl.Series([len(tokenize(t)) for t in texts], dtype=pl.Int64),
                                     chars=pl.col("text").str.len_chars(),
                                     unspaced=pl.Series([is_unspaced(t) for t in texts], dtype=pl.Boolean))
    per_image = distinct.group_by(["lang", "image"]).agg(n=pl.len())
    per_language = {}
    for code in sorted(df["lang"].unique().to_list()):
        rows, caps = df.filter(pl.col("lang") == code), distinct.filter(pl.col("lang") == code)
        counts = per_image.filter(pl.col("lang") == code)["n"]
        per_language[code] = {
            "captions": rows.height, "empty_captions": int((rows["text"] == "").sum()),
            "distinct_captions": caps.height, "images": int(rows["image"].n_unique()),
            "images_1": int((counts == 1).sum()), "images_2": int((counts == 2).sum()),
            "images_3plus": int((counts >= 3).sum()),
            "mean_words": _mean(caps["words"]), "mean_tokens": _mean(caps["tokens"]),
            "mean_chars": _mean(caps["chars"]), "unspaced_script": bool(caps["unspaced"].mean() > 0.5) if caps.height else None}
    return {"per_language": per_language, "distinct_captions": distinct.height}


def _mean(series: pl.Series) -> float | None:
    return float(series.mean()) if len(series) else None


def rating_shares(table: pa.Table, item: str = "item_id", rating: str = "rating", language: str = "language",
                  source: str = "input", id_column: str = "id") -> dict:
    """Per language, the share of rated captions whose median rating is GOOD or better (% Good+), MEDIUM or
    better (% Med+), and BAD. NOT-ENOUGH-INFO ratings are left out of the median; a caption rated only
    NOT-ENOUGH-INFO stays in the denominator (so Med+ and Bad need not sum to 100 %). With an even number
    of ratings the lower middle one is the median (a tie counts against the caption)."""
    require_columns(table, {item: "label", rating: "label", language: "label"}, source)
    values = [str(v).strip().lower() for v in labels(table, rating, source, id_column)]
    bad = np.asarray([v not in RATING_LEVELS and v not in NOT_ENOUGH_INFO for v in values])
    if bad.any():
        raise ContractError([Violation(source, rating, f"{int(bad.sum())} rating(s) not on the scale "
                                      "EXCELLENT, GOOD, MEDIUM, BAD, NOT-ENOUGH-INFO", row_labels(table, bad, id_column))])
    df = pl.DataFrame({"lang": group_labels(table, language, source, id_column).tolist(),
                       "item": [str(v) for v in labels(table, item, source, id_column)],
                       "level": pl.Series([RATING_LEVELS.get(v) for v in values], dtype=pl.Int8)})
    medians = df.group_by(["lang", "item"]).agg(levels=pl.col("level").drop_nulls().sort())
    medians = medians.with_columns(median=pl.col("levels").list.get(
        (pl.col("levels").list.len() - 1) // 2, null_on_oob=True))  # empty: only NOT-ENOUGH-INFO
    per_language = {}
    for code in sorted(medians["lang"].unique().to_list()):
        m = medians.filter(pl.col("lang") == code)["median"]
        n = len(m)
        per_language[code] = {"captions": n, "good_plus": float((m >= 2).sum() / n), "medium_plus": float((m >= 1).sum() / n),
                              "bad": float((m == 0).sum() / n), "not_enough_info": float(m.is_null().sum() / n)}
    return {"per_language": per_language}
