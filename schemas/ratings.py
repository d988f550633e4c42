"""Contract of a rated-pairs table: image–caption pairs with human ratings and the split each belongs
to (VICR as published; its translations). A score_input table with more columns, so `xmdata score`
scores it and `xmdata evaluate correlation` correlates the scores with `rating`."""
from __future__ import annotations

import pyarrow as pa

from .contract import TableContract
from .scoring import SCORE_INPUT

SPLITS = ("train", "val", "test")

RATED_PAIRS = TableContract(
    name="rated_pairs",
    schema=pa.schema([
        *(f for f in SCORE_INPUT.schema if f.name != "image_bytes"),  # id, image_path, text, language
        pa.field("image_id", pa.string()),  # the image's file name, shared by its captions
        pa.field("image_url", pa.string()),  # where the publisher's file points to the image
        pa.field("corpus", pa.string()),  # the image collection: coco (val2014) or flickr8k
        pa.field("split", pa.string()),  # train | val | test, as the publisher split them (by image)
        pa.field("rating", pa.float64()),  # mean of `ratings`
        pa.field("ratings", pa.list_(pa.int64())),  # every rater's rating, as published
        pa.field("refs", pa.list_(pa.string())),  # the image's reference captions, when known
    ]),
    required=frozenset({"id", "image_path", "text", "language", "split", "rating"}),
    description="Image–caption pairs with human ratings (one row per pair: the mean and every rating) and "
                "the publisher's split; image_path relative to the image root.",
    text_columns=frozenset({"text", "language"}),
)
