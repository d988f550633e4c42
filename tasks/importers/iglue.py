"""IGLUE's XVNLI and MaRVL test sets (e-bug/iglue, datasets/; checked at 43cbac9). XVNLI:
`annotations/<lang>/test.jsonl` (ar es fr ru, and en), one hypothesis a line with gold_label,
sentence1 (premise), sentence2 (hypothesis), captionID, pairID, Flikr30kID. MaRVL:
`zero_shot/annotations/marvl-<lang>.jsonl` (id sw ta tr zh), one instance a line with concept,
language, caption, left_img, right_img, annotator_info, chapter, id, label (true/false).

Beside them IGLUE ships the translate-test sets, `annotations_machine-translate/` (the test sets
machine-translated into English, MaRVL's lines still saying the source `language`), and few-shot
training files. Only the human-written test files are read by default; `translate_test` reads the
translate-test files instead, labelled en with `source_language` the set each came from. Ids name
the language and the variant, so no two files' rows can share one."""
from __future__ import annotations

import fnmatch
import hashlib
import json
import os

from xmdata.schemas.contract import ContractError
from xmdata.schemas.languages import LanguageCodeError, language_code
from xmdata.schemas.scoring import SCORE_INPUT

from .base import Imported, Published, files_in, json_lines, reject, rows_table
from .options import ImportOptions

XVNLI_LABELS = ("contradiction", "neutral", "entailment")
MACHINE_TRANSLATED = "annotations_machine-translate"
IGLUE = "e-bug/iglue@43cbac9 datasets/"
# Lines of each human test file; the translate-test files have the same lines, in the same order.
XVNLI_LINES = {"ar": 1164, "en": 1164, "es": 1164, "fr": 1164, "ru": 1164}  # 14 a file have gold_label "-"
XVNLI_LABELLED = 1150
MARVL_INSTANCES = {"id": 1128, "sw": 1108, "ta": 1242, "tr": 1180, "zh": 1012}


def is_translate_test(path: str) -> bool:
    """Under annotations_machine-translate/, or named as IGLUE names machine-translated files (`…_gmt.jsonl`)."""
    return MACHINE_TRANSLATED in os.path.normpath(path).split(os.sep) or path.endswith("_gmt.jsonl")


def test_files(source: str, pattern: str, fmt: str, options: ImportOptions, keep=lambda p: True) -> list[str]:
    """The human test files, or with translate_test the translate-test ones (a single file is read as given)."""
    wanted = "translate-test" if options.translate_test else "human-written test"
    name = os.path.basename(source)
    if os.path.isfile(source) and not (fnmatch.fnmatch(name, pattern.rsplit("/", 1)[-1]) and keep(source)):
        raise ContractError(f"{fmt}: {source}: not a test file (expected {pattern.rsplit('/', 1)[-1]}; few-shot "
                            "training files are no test set)")
    if os.path.isfile(source) and is_translate_test(source) != options.translate_test:
        raise ContractError(f"{fmt}: {source}: a {'human-written' if options.translate_test else 'translate-test'} "
                            f"file, not a {wanted} file" + ("" if options.translate_test else
                                                            " (machine-translated into English; --translate-test reads it)"))
    return files_in(source, pattern, fmt, f"{wanted} file ({pattern})",
                    lambda p: keep(p) and is_translate_test(p) == options.translate_test)


def folder_language(path: str, options: ImportOptions) -> str:
    """The language of annotations/<lang>/test.jsonl: its folder's; --language only for a folder that names none."""
    folder = os.path.basename(os.path.dirname(path))
    try:
        return language_code(folder, f"xvnli: {path}: its folder")
    except LanguageCodeError:
        if options.language:
            return options.language
        raise LanguageCodeError(f"xvnli: {path}: its folder {folder!r} names no language (IGLUE's are "
                                "annotations/<lang>/); say it with --language") from None


def published(counts: dict[str, int], options: ImportOptions, labelled: int | None = None) -> Published:
    keys = {f"lines/{lang}": n for lang, n in counts.items() if not (options.translate_test and lang == "en")}
    if labelled:
        keys |= {f"labelled/{k.split('/')[1]}": labelled for k in keys}
    variant = "annotations_machine-translate" if options.translate_test else "annotations"
    return Published(f"{IGLUE} ({variant})", keys)


def read_xvnli(source: str, options: ImportOptions) -> Imported:
    expected = '{"gold_label": …, "sentence1": …, "sentence2": …, "pairID": …, "Flikr30kID": …} per line'
    files = {p: json_lines(p, "xvnli", expected, ("gold_label", "sentence2", "pairID", "Flikr30kID"))
             for p in test_files(source, "**/test.jsonl", "xvnli", options)}
    rows, rejects, counts = [], [], {}
    for path, records in files.items():
        origin = folder_language(path, options)
        mt = is_translate_test(path)
        prefix = f"{origin}-translate-test" if mt else origin
        counts[f"lines/{origin}"] = counts.get(f"lines/{origin}", 0) + len(records)
        for _, r in records:
            row_id = f"{prefix}:{r['pairID']}"
            if r["gold_label"] not in XVNLI_LABELS:
                rejects.append(reject("xvnli", "no_gold_label", [row_id], [r["gold_label"]]))
                continue
            counts[f"labelled/{origin}"] = counts.get(f"labelled/{origin}", 0) + 1
            rows.append({"id": row_id, "image_path": f"{r['Flikr30kID']}.jpg", "text": r["sentence2"],
                         "language": "en" if mt else origin, "source_language": origin,
                         "image_id": str(r["Flikr30kID"]), "label": r["gold_label"], "premise": r.get("sentence1"),
                         "caption_id": r.get("captionID"), "pair_id": r["pairID"], "source_file": prefix})
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"IGLUE XVNLI {'translate-test' if options.translate_test else 'human-written test'} JSON Lines "
                    f"({len(files)} file(s))", sum(len(r) for r in files.values()), rejects,
                    counts=counts, published=published(XVNLI_LINES, options, XVNLI_LABELLED))


def read_marvl(source: str, options: ImportOptions) -> Imported:
    expected = '{"concept": …, "language": …, "caption": …, "left_img": …, "right_img": …, "id": …, "label": …} per line'
    files = {p: json_lines(p, "marvl", expected, ("concept", "caption", "left_img", "right_img", "id", "label"))
             for p in test_files(source, "**/marvl-*.jsonl", "marvl", options,
                                 lambda p: "_train" not in os.path.basename(p))}
    rows, rejects, counts = [], [], {}
    for path, records in files.items():
        name, mt = os.path.basename(path)[:-len(".jsonl")], is_translate_test(path)  # marvl-zh, marvl-zh_gmt
        for number, r in records:
            origin = language_code(r.get("language") or options.language, f"marvl: {path} line {number}")
            counts[f"instances/{origin}"] = counts.get(f"instances/{origin}", 0) + 1
            language = "en" if mt else origin
            if not isinstance(r["label"], bool) and str(r["label"]).lower() not in ("true", "false"):
                rejects.append(reject("marvl", "label_not_true_false", [f"{name}:{r['id']}"], [r["label"]]))
                continue
            digest = hashlib.sha1(f"{language}\x00{r['concept']}\x00{r['caption']}".encode()).hexdigest()[:12]
            item_id = f"{name}:{r['id']}"
            common = {"language": language, "source_language": origin, "item_id": item_id,
                      "caption_id": f"{name}:{digest}", "source_file": name, "label": str(r["label"]).lower(),
                      "concept": r["concept"], "chapter": r.get("chapter"), "left_img": r["left_img"],
                      "right_img": r["right_img"],
                      "annotator_info": json.dumps(r.get("annotator_info"), ensure_ascii=False, sort_keys=True)}
            # images as the MaRVL download lays them out, under the set's own language: <lang>/images/<concept>/<file>
            rows += [{"id": f"{item_id}#{side}", "text": r["caption"], "score_as": f"{side}_score",
                      "image_path": f"{r.get('language') or origin}/images/{r['concept']}/{r[side + '_img']}",
                      "image_id": r[side + "_img"], **common} for side in ("left", "right")]
    return Imported({"pairs": (rows_table(rows, SCORE_INPUT.schema), SCORE_INPUT)},
                    f"IGLUE MaRVL {'translate-test' if options.translate_test else 'human-written test'} JSON Lines "
                    f"({len(files)} file(s))", sum(len(r) for r in files.values()), rejects,
                    counts=counts, published=Published(
                        f"{IGLUE} (marvl/zero_shot/{MACHINE_TRANSLATED if options.translate_test else 'annotations'})",
                        {f"instances/{lang}": n for lang, n in MARVL_INSTANCES.items()}))
