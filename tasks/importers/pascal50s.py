"""Pascal-50S (Vedantam et al., 2015), as CIDEr's pyCIDErConsensus ships it and CLIPScore's
Pascal50sDataset reads it: `pair_pascal.mat` (new_input: image, caption A, caption B per pair;
category 1-4 = HC, HI, HM, MM) and `consensus_pascal.mat` (triplets: 48 per pair, in pair order, each
reference, A, B and the annotator's choice 1 = A, 2 = B). Votes are counted per caption."""
from __future__ import annotations

import os

import numpy as np

from xmdata.schemas.contract import ContractError
from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, layout_error, reject, rows_table
from .options import ImportOptions

FORMAT = "pascal50s"
CATEGORIES = {1: "HC", 2: "HI", 3: "HM", 4: "MM"}


def leaves(value) -> list:
    """The strings and numbers inside a MATLAB cell/struct as scipy loads it, in order."""
    if isinstance(value, (str, bytes)):
        return [value.strip() if isinstance(value, str) else value.decode().strip()]
    if isinstance(value, np.ndarray) and value.dtype.kind in "iuf":
        return value.ravel().tolist()
    if isinstance(value, (np.ndarray, np.void, list, tuple)):
        return [leaf for item in value for leaf in leaves(item)]
    return [value.item() if hasattr(value, "item") else value]


def _find(source: str, name: str) -> str:
    for candidate in (os.path.join(source, name), os.path.join(source, "pyCIDErConsensus", name)):
        if os.path.isfile(candidate):
            return candidate
    raise ContractError(f"{FORMAT}: {source}: no {name} here nor in pyCIDErConsensus/")


def _load(path: str, keys: tuple[str, ...]) -> dict:
    from scipy.io import loadmat  # scipy is heavy-ish: only when this format is imported

    try:
        mat = loadmat(path)
    except Exception as exc:  # scipy raises several kinds for a file that is not MATLAB v5
        raise layout_error(FORMAT, path, "a MATLAB .mat file", problem=str(exc).splitlines()[0]) from exc
    missing = [k for k in keys if k not in mat]
    if missing:
        raise layout_error(FORMAT, path, f"a .mat file with {', '.join(keys)}", problem=f"no {', '.join(missing)}")
    return mat


def read_pascal50s(source: str, options: ImportOptions) -> Imported:
    pair_path, consensus_path = _find(source, "pair_pascal.mat"), _find(source, "consensus_pascal.mat")
    pairs_mat, consensus = _load(pair_path, ("new_input", "category")), _load(consensus_path, ("triplets",))
    inputs, categories = pairs_mat["new_input"].ravel(), np.asarray(pairs_mat["category"]).ravel()
    triplets = consensus["triplets"].ravel()
    if len(inputs) == 0 or len(triplets) % len(inputs) or len(categories) != len(inputs):
        raise layout_error(FORMAT, consensus_path, "as many triplets per pair for every pair of pair_pascal.mat",
                           problem=f"{len(triplets)} triplets for {len(inputs)} pairs, {len(categories)} categories")
    per_pair = len(triplets) // len(inputs)
    rows, rejects = [], []
    for i, item in enumerate(inputs):
        pair_id = f"pair{i:05d}"
        fields = leaves(item)
        judged = [leaves(t) for t in triplets[i * per_pair:(i + 1) * per_pair]]
        if len(fields) != 3 or any(len(t) != 4 for t in judged):
            raise layout_error(FORMAT, pair_path, "(image, caption A, caption B) pairs and (reference, A, B, "
                               "choice) triplets", i + 1, repr(fields))
        image, a, b = (str(f) for f in fields)
        if any(t[3] not in (1, 2) for t in judged) or int(categories[i]) not in CATEGORIES:
            raise layout_error(FORMAT, consensus_path, "choices 1 (A) or 2 (B) and categories 1-4", i + 1,
                               repr([t[3] for t in judged][:8] + [categories[i]]))
        chosen = [str(t[1] if t[3] == 1 else t[2]) for t in judged]
        votes_a, votes_b = chosen.count(a), chosen.count(b)
        if votes_a + votes_b != len(judged):  # a triplet about other captions: the files disagree
            rejects.append(reject(FORMAT, "votes_for_other_captions", [pair_id], [f"{a} | {b}"]))
            continue
        common = {"image_path": image, "image_id": image, "language": options.language or "en", "item_id": pair_id,
                  "category": CATEGORIES[int(categories[i])], "votes_a": votes_a,
                  "votes_b": votes_b, "refs": [str(t[0]) for t in judged]}
        rows += [{"id": f"{pair_id}#a", "text": a, "score_as": "score_a", **common},
                 {"id": f"{pair_id}#b", "text": b, "score_as": "score_b", **common}]
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"pair_pascal.mat + consensus_pascal.mat ({per_pair} judgements per pair)", len(inputs), rejects)
