"""MaXM v1 (google-research-datasets/maxm): one JSON file per language ({"dataset", "version", "split":
<lang>, "annotations": [{"image_id", "image_url", "qa_pairs": [{"question_id", "question", "answers",
…}]}]}); images are Crossmodal-3600's `<image_id>.jpg` -> qa (one row per question: its first answer)."""
from __future__ import annotations

import json

import pyarrow as pa

from xmdata.schemas.languages import language_code

from .base import Imported, drop_missing_images, files_in, layout_error, reject
from .options import ImportOptions

FORMAT = "maxm"
EXPECTED = '{"split": "<lang>", "annotations": [{"image_id": …, "qa_pairs": [{"question_id", "question", "answers"}]}]}'
QA_SCHEMA = pa.schema([(n, pa.string()) for n in ("id", "language", "image_id", "image_path", "question", "answer")])


def read_maxm(source: str, options: ImportOptions) -> Imported:
    rows, rejects, read = [], [], 0
    for path in files_in(source, "*.json", FORMAT, "MaXM .json file"):
        try:
            data = json.load(open(path, encoding="utf-8"))
        except json.JSONDecodeError as exc:
            raise layout_error(FORMAT, path, EXPECTED, exc.lineno, None, f"not JSON: {exc.msg}") from exc
        if not isinstance(data, dict) or not isinstance(data.get("annotations"), list) or "split" not in data:
            raise layout_error(FORMAT, path, EXPECTED, problem="no split or annotations list")
        language = language_code(data["split"], f"{path}: its split (the language; MaXM writes Hebrew as iw)")
        for entry in data["annotations"]:
            for qa in entry.get("qa_pairs", []):
                read += 1
                qid = f"{language}/{qa.get('question_id')}"
                answers = [a for a in qa.get("answers") or [] if isinstance(a, str) and a.strip()]
                if not (qa.get("question") or "").strip() or not answers:
                    rejects.append(reject(FORMAT, "no_question_or_answer", [qid], [qa.get("question")]))
                    continue
                rows.append({"id": qid, "language": language, "image_id": str(entry["image_id"]),
                             "image_path": f"{entry['image_id']}.jpg", "question": qa["question"].strip(),
                             "answer": answers[0].strip()})
    rows, missing = drop_missing_images(rows, options.images, FORMAT, "image_path")
    rejects += missing
    return Imported(tables={"qa": (pa.Table.from_pylist(rows, QA_SCHEMA), None)}, layout="MaXM v1 JSON per language",
                    rows_read=read, rejects=rejects, notes={"languages": sorted({r["language"] for r in rows})})
