"""Every table xmdata reads or writes, by name. Column names say which stage made them."""
from __future__ import annotations

import pyarrow as pa

from .contract import TableContract

REJECTS_SCHEMA = pa.schema([
    pa.field("stage", pa.string(), nullable=False),
    pa.field("reason", pa.string(), nullable=False),
    pa.field("row_id", pa.string()),
    pa.field("value", pa.string()),  # the offending value, cut to 200 characters
])

CAPTIONS = TableContract(
    name="captions",
    schema=pa.schema([
        pa.field("id", pa.string()),
        pa.field("text", pa.string()),
        pa.field("language", pa.string()),
        pa.field("image_id", pa.string()),
    ]),
    required=frozenset({"id", "text"}),
    description="Texts to process: one row per caption, with its declared language if known.",
    text_columns=frozenset({"text", "language"}),
)

IMAGES = TableContract(
    name="images",
    schema=pa.schema([
        pa.field("id", pa.string()),
        pa.field("latitude", pa.float64()),
        pa.field("longitude", pa.float64()),
        pa.field("path", pa.string()),
        pa.field("url", pa.string()),
        pa.field("license", pa.string()),
    ]),
    required=frozenset({"id", "latitude", "longitude"}),
    description="Candidate images with GPS coordinates.",
)

LANGUAGE_ID = TableContract(
    name="language_id",
    schema=CAPTIONS.schema.append(pa.field("lid_label", pa.string())).append(
        pa.field("lid_prob", pa.float32())).append(pa.field("lid_label_raw", pa.string())),
    required=frozenset({"id", "text", "lid_label", "lid_prob"}),
    description="Captions with the fastText label as the project's code (null: a label that names no single "
                "language), its probability, and the model's own label (lid_label_raw).",
)

REJECTS = TableContract(
    name="rejects", schema=REJECTS_SCHEMA, required=frozenset({"stage", "reason"}), id_column="row_id",
    description="Rows a stage refused, with the stage and the reason.",
)

CONTRACTS = {c.name: c for c in (CAPTIONS, IMAGES, LANGUAGE_ID, REJECTS)}

GEOCODED = TableContract(
    name="geocoded",
    schema=IMAGES.schema.append(pa.field("country", pa.string())).append(
        pa.field("admin1", pa.string())).append(pa.field("continent", pa.string())).append(
        pa.field("geo_place_km", pa.float32())).append(pa.field("geo_flag", pa.string())),
    required=frozenset({"id", "latitude", "longitude", "country", "admin1", "continent"}),
    description="Images with their place: ISO country, GeoNames admin1, continent, and a flag "
                "(at_sea, far_from_place) when the place is only a guess.",
)

SELECTION = TableContract(
    name="selection",
    schema=pa.schema([
        pa.field("language", pa.string()), pa.field("image_id", pa.string()),
        pa.field("latitude", pa.float64()), pa.field("longitude", pa.float64()),
        pa.field("country", pa.string()), pa.field("admin1", pa.string()),
        pa.field("continent", pa.string()), pa.field("level", pa.string()),
        pa.field("strategy", pa.string()), pa.field("seed", pa.int64()),
    ]),
    required=frozenset({"language", "image_id", "level"}), id_column="image_id",
    description="K images per language; level is region, country, continent or global.",
)

CONTRACTS.update({c.name: c for c in (GEOCODED, SELECTION)})

from .translation import (CANDIDATES, TRANSLATION_CANDIDATES, QA_CANDIDATES, QA_COUNTS,  # noqa: E402
                          QA_ENGINE_CANDIDATES, QA_INPUT, QA_PARALLEL, TRANSLATIONS)

CONTRACTS.update({c.name: c for c in (CANDIDATES, TRANSLATION_CANDIDATES, TRANSLATIONS, QA_INPUT, QA_CANDIDATES,
                                      QA_ENGINE_CANDIDATES, QA_PARALLEL, QA_COUNTS)})

from .scoring import SCORE_INPUT, SCORES  # noqa: E402  (kept in their own module)

CONTRACTS.update({c.name: c for c in (SCORE_INPUT, SCORES)})

from .clean import CLEAN_CAPTIONS, CLEAN_IMAGES, MATCHES  # noqa: E402  (kept in their own module)

CONTRACTS.update({c.name: c for c in (CLEAN_IMAGES, CLEAN_CAPTIONS, MATCHES)})

from .mbr import MBR_DECISIONS, MBR_UTILITIES  # noqa: E402  (kept in its own module)

CONTRACTS.update({c.name: c for c in (MBR_UTILITIES, MBR_DECISIONS)})

from .ratings import RATED_PAIRS  # noqa: E402  (kept in its own module)

CONTRACTS[RATED_PAIRS.name] = RATED_PAIRS
