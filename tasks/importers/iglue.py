"""IGLUE's XVNLI and MaRVL annotation files (e-bug/iglue, datasets/). XVNLI:
`annotations/<lang>/test.jsonl` (and the machine-translated `annotations_machine-translate/<lang>/
test.jsonl`), one hypothesis a line with gold_label, sentence1 (premise), sentence2 (hypothesis),
captionID, pairID, Flikr30kID. MaRVL: `zero_shot/annotations/marvl-<lang>.jsonl` (and
`annotations_machine-translate/marvl-<lang>_gmt.jsonl`), one instance a line with concept, language,
caption, left_img, right_img, annotator_info, chapter, id, label (true/false). A folder is read for its
test files only (few-shot training files are left alone); `source_file` says which file a row is from."""
from __future__ import annotations

import hashlib
import json
import os

from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, files_in, json_lines, reject, rows_table
from .options import ImportOptions

XVNLI_LABELS = ("contradiction", "neutral", "entailment")


def source_name(path: str, source: str) -> str:
    """The file's path under SOURCE: unique across human and machine-translated copies."""
    return os.path.relpath(path, source) if os.path.isdir(source) else os.path.basename(path)


def read_xvnli(source: str, options: ImportOptions) -> Imported:
    expected = '{"gold_label": …, "sentence1": …, "sentence2": …, "pairID": …, "Flikr30kID": …} per line'
    files = {p: json_lines(p, "xvnli", expected, ("gold_label", "sentence2", "pairID", "Flikr30kID"))
             for p in files_in(source, "**/test.jsonl", "xvnli", "**/test.jsonl file")}
    rows, rejects, read = [], [], 0
    for path, records in files.items():
        folder = os.path.basename(os.path.dirname(path))  # annotations/<lang>/test.jsonl
        language = options.language or (folder if len(folder) in (2, 3) else "en")
        name = source_name(path, source)
        for _, r in records:
            read += 1
            row_id = f"{name}:{r['pairID']}"
            if r["gold_label"] not in XVNLI_LABELS:
                rejects.append(reject("xvnli", "no_gold_label", [row_id], [r["gold_label"]]))
                continue
            rows.append({"id": row_id, "image_path": f"{r['Flikr30kID']}.jpg", "text": r["sentence2"],
                         "language": language, "image_id": str(r["Flikr30kID"]), "label": r["gold_label"],
                         "premise": r.get("sentence1"), "caption_id": r.get("captionID"), "pair_id": r["pairID"],
                         "source_file": name})
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"IGLUE XVNLI JSON Lines ({len(files)} file(s))", read, rejects)


def read_marvl(source: str, options: ImportOptions) -> Imported:
    expected = '{"concept": …, "language": …, "caption": …, "left_img": …, "right_img": …, "id": …, "label": …} per line'
    files = {p: json_lines(p, "marvl", expected, ("concept", "caption", "left_img", "right_img", "id", "label"))
             for p in files_in(source, "**/marvl-*.jsonl", "marvl", "**/marvl-*.jsonl file",
                                lambda p: "_train" not in os.path.basename(p))}
    rows, rejects, read = [], [], 0
    for path, records in files.items():
        name = source_name(path, source)
        for _, r in records:
            read += 1
            language = r.get("language") or options.language or "en"
            if not isinstance(r["label"], bool) and str(r["label"]).lower() not in ("true", "false"):
                rejects.append(reject("marvl", "label_not_true_false", [f"{name}:{r['id']}"], [r["label"]]))
                continue
            digest = hashlib.sha1(f"{language}\x00{r['concept']}\x00{r['caption']}".encode()).hexdigest()[:12]
            item_id = f"{name}:{r['id']}"
            common = {"language": language, "item_id": item_id, "caption_id": f"{name}:{digest}", "source_file": name,
                      "label": str(r["label"]).lower(), "concept": r["concept"], "chapter": r.get("chapter"),
                      "left_img": r["left_img"], "right_img": r["right_img"],
                      "annotator_info": json.dumps(r.get("annotator_info"), ensure_ascii=False, sort_keys=True)}
            # images as the MaRVL download lays them out: <lang>/images/<concept>/<file>
            rows += [{"id": f"{item_id}#{side}", "text": r["caption"], "score_as": f"{side}_score",
                      "image_path": f"{language}/images/{r['concept']}/{r[side + '_img']}",
                      "image_id": r[side + "_img"], **common} for side in ("left", "right")]
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"IGLUE MaRVL JSON Lines ({len(files)} file(s))", read, rejects)
