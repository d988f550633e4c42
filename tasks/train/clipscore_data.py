"""The training data of `train clipscore` (tasks/train/clipscore.py), read from a release and checked
whole before a file is written: its captions and translations (the contrastive task) and its human-rated
pairs (the Pearson task; the `train_split` pairs to train on, the `eval_split` ones held out), the folder
each table's images are under, and a reject for every row whose image file is missing."""
from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from xmdata.schemas.contract import ContractError
from xmdata.tasks.train.clipscore_params import ClipscoreParams

CAPTION_COLUMNS = ("image_path", "text")
RATED_COLUMNS = ("image_path", "text", "rating", "split")
@dataclass(frozen=True)
class ClipscoreData:
    captions: pa.Table  # image_path, text, language: the contrastive task
    train: pa.Table     # rated pairs of train_split: id, image_path, text, language, rating, contrastive_text
    held_out: pa.Table  # rated pairs of eval_split, as they are in the release
    roots: dict[str, str]  # "captions", "rated": the folder each table's image paths are under
    rejects: pa.Table   # rows left out because their image file is missing


def _with_images(table: pa.Table, root: str, table_name: str) -> tuple[pa.Table, list]:
    """The rows whose image file is under ROOT, and rejects for the others (image_file_missing)."""
    from xmdata.tasks.build.image_decode import resolve_under_root

    paths = table["image_path"].to_pylist()
    found = {p: p is not None and (q := resolve_under_root(root, p)) is not None and os.path.isfile(q)
             for p in set(paths)}
    keep = pa.array([found[p] for p in paths], pa.bool_())
    ids = table["id"].to_pylist() if "id" in table.column_names else [str(i) for i in range(table.num_rows)]
    gone = [(i, p) for i, p in zip(ids, paths) if not found[p]]
    rejects = [make_reject("image_file_missing", [f"{table_name}/{i}" for i, _ in gone], [p for _, p in gone])] \
        if gone else []
    return table.filter(keep), rejects


def make_reject(reason: str, ids: list, values: list):
    from xmdata.tasks.build.rejects import make_rejects

    return make_rejects("train_clipscore", reason, ids, values)


def image_root(release: str, table: str, given: str | None) -> str:
    """The folder TABLE's image paths are under: --image-root when given, else where the release's build
    recorded them (tasks/release/image_roots.py), else the release folder."""
    from xmdata.tasks.release.image_roots import recorded_image_root

    if given:
        root = os.path.abspath(os.path.expanduser(given))
        if not os.path.isdir(root):
            raise ContractError(f"--image-root {root}: not a folder")
        return root
    return recorded_image_root(release, table) or os.path.abspath(release)


def check_clipscore(release: str, params: ClipscoreParams) -> ClipscoreData:
    """Everything refusable before a file is written: the release, its two tables, their columns, rows
    to train on, the model."""
    from xmdata.tasks.build.rejects import concat_rejects
    from xmdata.tasks.scoring.input import check_clip_model
    from xmdata.tasks.train.card import release_identity, release_table

    release_identity(release)  # no readable manifest.json: one line
    captions = release_table(release, params.captions_table, "the captions and translations", "train clipscore",
                             CAPTION_COLUMNS)
    rated = release_table(release, params.ratings_table, "the human-rated pairs", "train clipscore", RATED_COLUMNS)
    roots = {"captions": image_root(release, params.captions_table, params.image_root),
             "rated": image_root(release, params.ratings_table, params.image_root)}
    if "status" in captions.column_names:  # the scoring stage's table: its refused rows have no usable pair
        captions = captions.filter(pc.equal(captions["status"], "ok"))
    captions = captions.filter(pc.and_(pc.is_valid(captions["text"]), pc.is_valid(captions["image_path"])))
    if "language" not in captions.column_names:
        captions = captions.append_column("language", pa.nulls(captions.num_rows, pa.string()))
    if "id" not in rated.column_names:
        raise ContractError(f"{release}: the {params.ratings_table} table lacks column id")
    captions, caption_rejects = _with_images(captions, roots["captions"], params.captions_table)
    rated, rated_rejects = _with_images(rated, roots["rated"], params.ratings_table)
    train = rated.filter(pc.equal(rated["split"], params.train_split))
    held_out = rated.filter(pc.equal(rated["split"], params.eval_split))
    for table, what, root in (
            (captions, f"{params.captions_table} row with an image", roots["captions"]),
            (train, f"{params.ratings_table} pair of split {params.train_split!r} with an image", roots["rated"]),
            (held_out, f"{params.ratings_table} pair of split {params.eval_split!r} with an image", roots["rated"])):
        if table.num_rows == 0:
            raise ContractError(f"{release}: no {what} (images under {root})")
    overlap = set(train["id"].to_pylist()) & set(held_out["id"].to_pylist())
    if overlap:
        raise ContractError(f"{release}: {len(overlap)} id(s) in both {params.train_split!r} and "
                            f"{params.eval_split!r}, e.g. {sorted(overlap)[0]!r}")
    check_clip_model(params.clip_model, params.pretrained)
    return ClipscoreData(captions.select(["image_path", "text", "language"]),
                         _training_pairs(train), held_out, roots, concat_rejects(caption_rejects + rated_rejects))


def _training_pairs(rated: pa.Table) -> pa.Table:
    """The rated pairs in id order, with the text their contrastive loss pairs the image with."""
    rated = rated.sort_by("id")
    refs = rated["refs"].to_pylist() if "refs" in rated.column_names else [None] * rated.num_rows
    texts = rated["text"].to_pylist()
    contrastive = [r[0] if r else t for r, t in zip(refs, texts)]
    language = rated["language"] if "language" in rated.column_names else pa.nulls(rated.num_rows, pa.string())
    return pa.table({"id": rated["id"], "image_path": rated["image_path"], "text": rated["text"],
                     "language": language, "rating": pc.cast(rated["rating"], pa.float64()),
                     "contrastive_text": pa.array(contrastive, pa.string())})
