"""The scores table of a shard, aligned with its input: one row per pair, scored or refused."""
from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow as pa

from xmdata.schemas.scoring import SCORE_FIELDS, embedding_type

from .clip_scores import clip_score, ref_clip_score
from xmdata.tasks.build.rejects import concat_rejects, make_rejects
from xmdata.tasks.scoring.pairs import ShardPairs


def _nullable(values: np.ndarray, ok: np.ndarray, arrow_type: pa.DataType) -> pa.Array:
    """A full-length column from values of the ok rows; null for refused rows and for NaN."""
    full = np.zeros(len(ok), dtype=values.dtype)
    full[ok] = values
    missing = ~ok | (np.isnan(full) if full.dtype.kind == "f" else False)
    return pa.array(full, type=arrow_type, mask=missing)


def _embeddings(emb: np.ndarray, ok: np.ndarray, dtype: str) -> pa.Array:
    full = np.zeros((len(ok), emb.shape[1]), dtype=np.dtype(dtype))
    full[ok] = emb
    return pa.FixedSizeListArray.from_arrays(pa.array(full.ravel()), type=embedding_type(emb.shape[1], dtype),
                                             mask=pa.array(~ok))


def scored_table(table: pa.Table, pairs: ShardPairs, image_emb: np.ndarray, failures: dict, text_emb: np.ndarray,
                 truncated: np.ndarray, params, stage: str) -> tuple[pa.Table, pa.Table]:
    """(input columns but image bytes + status, error_message, scores [, embeddings]; rejects);
    params: the stage's ScoringParams (weight, embeddings)."""
    errors = [e if e is not None or pairs.image_of[i] not in failures else failures[pairs.image_of[i]]
              for i, e in enumerate(pairs.errors)]
    ok = np.array([e is None for e in errors], dtype=bool)
    rows = np.flatnonzero(ok)
    image_of = np.array(pairs.image_of, dtype=np.int64)[rows]
    text_of = np.array(pairs.text_of, dtype=np.int64)[rows]
    images, texts = image_emb[image_of], text_emb[text_of]
    scores = clip_score(images, texts, params.weight)
    owners = np.array([k for k, row in enumerate(rows) for _ in pairs.refs_of[row]], dtype=np.int64)
    refs = np.array([r for row in rows for r in pairs.refs_of[row]], dtype=np.int64)
    ref_scores = ref_clip_score(scores, texts, text_emb[refs], owners)
    refs_cut = [None] * len(ok)  # null where a pair has no references
    for row in rows:
        if pairs.refs_of[row]:
            refs_cut[row] = bool(truncated[pairs.refs_of[row]].any())

    columns = {
        "status": pa.array(["ok" if e is None else "rejected" for e in errors], pa.string()),
        "error_message": pa.array([None if e is None else e[1] for e in errors], pa.string()),
        "clip_score": _nullable(scores, ok, pa.float64()),
        "ref_clip_score": _nullable(ref_scores, ok, pa.float64()),
        "text_truncated": _nullable(truncated[text_of], ok, pa.bool_()),
        "refs_truncated": pa.array(refs_cut, pa.bool_()),
    }
    out = table.drop_columns([c for c in ("image_bytes",) if c in table.column_names])
    for f in SCORE_FIELDS:
        out = out.append_column(f, columns[f.name])
    if params.embeddings != "none":
        out = out.append_column("image_embedding", _embeddings(images, ok, params.embeddings))
        out = out.append_column("text_embedding", _embeddings(texts, ok, params.embeddings))
    return out, _rejects(table, pairs, errors, stage)


def _rejects(table: pa.Table, pairs: ShardPairs, errors: list, stage: str) -> pa.Table:
    """One rejects row per refused pair, grouped by reason; the value is the text or image at fault."""
    ids, texts = table.column("id").to_pylist(), table.column("text").to_pylist()
    by_reason: dict[str, tuple[list, list]] = defaultdict(lambda: ([], []))
    for i, error in enumerate(errors):
        if error is not None:
            image = pairs.image_of[i]
            value = pairs.images[image].describe() if image >= 0 else texts[i] if error[0] == "empty_text" else None
            by_reason[error[0]][0].append(ids[i])
            by_reason[error[0]][1].append(value)
    return concat_rejects([make_rejects(stage, reason, *by_reason[reason]) for reason in sorted(by_reason)])
