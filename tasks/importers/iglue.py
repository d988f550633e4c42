"""IGLUE's XVNLI and MaRVL annotation files (e-bug/iglue, datasets/). XVNLI:
`annotations/<lang>/test.jsonl`, one hypothesis a line with gold_label, sentence1 (premise), sentence2
(hypothesis), captionID, pairID, Flikr30kID. MaRVL: `marvl-<lang>.jsonl`, one instance a line with
concept, language, caption, left_img, right_img, annotator_info, chapter, id, label (true/false)."""
from __future__ import annotations

import glob
import hashlib
import json
import os

from xmdata.schemas.contract import ContractError
from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, json_lines, reject, rows_table
from .options import ImportOptions

XVNLI_LABELS = ("contradiction", "neutral", "entailment")


def jsonl_files(source: str, pattern: str, fmt: str) -> list[str]:
    files = sorted(glob.glob(os.path.join(source, pattern), recursive=True)) if os.path.isdir(source) else [source]
    if not files:
        raise ContractError(f"{fmt}: {source}: no {pattern} file in this folder")
    return files


def read_xvnli(source: str, options: ImportOptions) -> Imported:
    expected = '{"gold_label": …, "sentence1": …, "sentence2": …, "pairID": …, "Flikr30kID": …} per line'
    files = {p: json_lines(p, "xvnli", expected, ("gold_label", "sentence2", "pairID", "Flikr30kID"))
             for p in jsonl_files(source, "**/*.jsonl", "xvnli")}
    rows, rejects, read = [], [], 0
    for path, records in files.items():
        folder = os.path.basename(os.path.dirname(path))  # annotations/<lang>/test.jsonl
        language = options.language or (folder if len(folder) in (2, 3) else "en")
        for _, r in records:
            read += 1
            row_id = f"{language}/{r['pairID']}"
            if r["gold_label"] not in XVNLI_LABELS:
                rejects.append(reject("xvnli", "no_gold_label", [row_id], [r["gold_label"]]))
                continue
            rows.append({"id": row_id, "image_path": f"{r['Flikr30kID']}.jpg", "text": r["sentence2"],
                         "language": language, "image_id": str(r["Flikr30kID"]), "label": r["gold_label"],
                         "premise": r.get("sentence1"), "caption_id": r.get("captionID"), "pair_id": r["pairID"],
                         "split": os.path.basename(path)[:-len(".jsonl")]})
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"IGLUE XVNLI JSON Lines ({len(files)} file(s))", read, rejects)


def read_marvl(source: str, options: ImportOptions) -> Imported:
    expected = '{"concept": …, "language": …, "caption": …, "left_img": …, "right_img": …, "id": …, "label": …} per line'
    files = {p: json_lines(p, "marvl", expected, ("concept", "caption", "left_img", "right_img", "id", "label"))
             for p in jsonl_files(source, "**/marvl-*.jsonl", "marvl")}
    rows, rejects, read = [], [], 0
    for path, records in files.items():
        for _, r in records:
            read += 1
            language = r.get("language") or options.language or "en"
            if not isinstance(r["label"], bool) and str(r["label"]).lower() not in ("true", "false"):
                rejects.append(reject("marvl", "label_not_true_false", [r["id"]], [r["label"]]))
                continue
            digest = hashlib.sha1(f"{language}\x00{r['concept']}\x00{r['caption']}".encode()).hexdigest()[:12]
            common = {"language": language, "item_id": str(r["id"]), "caption_id": f"{language}/{digest}",
                      "label": str(r["label"]).lower(), "concept": r["concept"], "chapter": r.get("chapter"),
                      "left_img": r["left_img"], "right_img": r["right_img"],
                      "annotator_info": json.dumps(r.get("annotator_info"), ensure_ascii=False, sort_keys=True)}
            # images as the MaRVL download lays them out: <lang>/images/<concept>/<file>
            rows += [{"id": f"{r['id']}#{side}", "text": r["caption"], "score_as": f"{side}_score",
                      "image_path": f"{language}/images/{r['concept']}/{r[side + '_img']}",
                      "image_id": r[side + "_img"], **common} for side in ("left", "right")]
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"IGLUE MaRVL JSON Lines ({len(files)} file(s))", read, rejects)
