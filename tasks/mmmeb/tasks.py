"""MMMEB's task instances (xVLM2Vec, Section 5) from imported tables: each instance one query and one
gold candidate, candidates shared where the paper shares them (rows with the same answer, class or
caption are one candidate). Images are `<import name>/<path>`, so a published table names no machine.

Retrieval (I2T, T2I) from Crossmodal-3600 (the first caption per language) and XTD10; VQA from MaXM
(the first answer); VG from Flickr30k Entities (the entity's box: the crop is the candidate);
classification (C) from the first N ImageNet validation images with Babel-ImageNet names."""
from __future__ import annotations

import glob
import os
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.parquet as pq

from xmdata.tasks.build.rejects import concat_rejects, make_rejects

STAGE = "mmmeb_tasks"
# The paper's Table 1: (task, dataset) -> the source role it comes from.
TASKS = {("I2T", "xm3600"): "xm3600", ("T2I", "xm3600"): "xm3600", ("I2T", "xtd10"): "xtd10",
         ("T2I", "xtd10"): "xtd10", ("VQA", "maxm"): "maxm", ("VG", "flickr30k_entities"): "flickr30k_entities",
         ("C", "imagenet"): "imagenet"}
# Where the paper has a task in a language (Table 1): ALL = en, fr, de, it, es.
PAPER_LANGUAGES = {"maxm": ("en", "fr"), "flickr30k_entities": ("en", "fr")}


@dataclass
class Source:
    """One import feeding a role: its name (the prefix of image paths), its tables, its image root."""
    name: str
    folder: str
    tables: dict[str, pa.Table] = field(default_factory=dict)


@dataclass
class Instances:
    queries: list[dict] = field(default_factory=list)
    candidates: dict[str, dict] = field(default_factory=dict)
    rejects: list[pa.Table] = field(default_factory=list)

    def add(self, task, dataset, language, qid, query_text, query_image, query_box, key, text, image, box):
        cid = f"{task}/{dataset}/{language}/{key}"
        self.candidates.setdefault(cid, {"id": cid, "task": task, "dataset": dataset, "language": language,
                                         "text": text, "image": image, "box": box})
        self.queries.append({"id": f"{task}/{dataset}/{language}/{qid}", "task": task, "dataset": dataset,
                             "language": language, "text": query_text, "image": query_image, "box": query_box,
                             "gold": cid})


def read_source(name: str, folder: str) -> Source:
    tables = {os.path.basename(p)[:-8]: pq.read_table(p) for p in sorted(glob.glob(os.path.join(folder, "*.parquet")))
              if not p.endswith("rejects.parquet")}
    return Source(name, folder, tables)


def _image(source: Source, path: str | None) -> str | None:
    return None if path is None else f"{source.name}/{path}"


def retrieval(out: Instances, source: Source, dataset: str, languages: list[str], first_caption_only: bool):
    images = {r["id"]: r["path"] for r in source.tables["images"].select(["id", "path"]).to_pylist()}
    for row in source.tables["captions"].sort_by("id").to_pylist():
        if row["language"] not in languages or (first_caption_only and row.get("caption_index", 0) != 0):
            continue
        image = images.get(row["image_id"])
        if image is None:
            out.rejects.append(make_rejects(STAGE, "caption_without_image", [row["id"]], [row["image_id"]]))
            continue
        lang, path = row["language"], _image(source, image)
        out.add("I2T", dataset, lang, row["image_id"], None, path, None, row["image_id"], row["text"], None, None)
        out.add("T2I", dataset, lang, row["image_id"], row["text"], None, None, row["image_id"], None, path, None)


def vqa(out: Instances, source: Source, languages: list[str]):
    for row in source.tables["qa"].sort_by("id").to_pylist():
        if row["language"] in languages:
            out.add("VQA", "maxm", row["language"], row["id"].split("/", 1)[1], row["question"],
                    _image(source, row["image_path"]), None, row["answer"].casefold(), row["answer"], None, None)


def grounding(out: Instances, source: Source, languages: list[str]):
    for row in source.tables["phrases"].sort_by("id").to_pylist():
        if row["language"] in languages:
            key = row["id"].split("/", 1)[1]
            path = _image(source, row["image_path"])
            out.add("VG", "flickr30k_entities", row["language"], key, row["phrase"], path, None, key, None, path,
                    row["box"])


def classification(out: Instances, source: Source, languages: list[str], first: int):
    labels = {(r["language"], r["class_index"]): r["label"] for r in source.tables["labels"].to_pylist()}
    images = source.tables["images"].sort_by("id").slice(0, first).to_pylist()  # the first N of the split
    for lang in languages:
        named = sorted(i for (language, i) in labels if language == lang)
        for index in named:  # every class the language names is a candidate, asked for or not
            cid = f"C/imagenet/{lang}/{index}"
            out.candidates.setdefault(cid, {"id": cid, "task": "C", "dataset": "imagenet", "language": lang,
                                            "text": labels[(lang, index)], "image": None, "box": None})
        for row in images:
            if (lang, row["class_index"]) not in labels:
                out.rejects.append(make_rejects(STAGE, "class_without_label", [f"C/imagenet/{lang}/{row['id']}"],
                                                [row["synset"]]))
                continue
            out.add("C", "imagenet", lang, row["id"], None, _image(source, row["path"]), None, row["class_index"],
                    labels[(lang, row["class_index"])], None, None)


def build_instances(sources: dict[str, list[Source]], languages: list[str], imagenet_first: int) -> Instances:
    out = Instances()
    for source in sources.get("xm3600", []):
        retrieval(out, source, "xm3600", languages, first_caption_only=True)
    for source in sources.get("xtd10", []):
        retrieval(out, source, "xtd10", languages, first_caption_only=False)
    for source in sources.get("maxm", []):
        vqa(out, source, languages)
    for source in sources.get("flickr30k_entities", []):
        grounding(out, source, languages)
    for source in sources.get("imagenet", []):
        classification(out, source, languages, imagenet_first)
    out.rejects = [concat_rejects(out.rejects)]
    return out
